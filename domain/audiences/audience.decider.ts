import { visibleTo } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { CommandCaller } from '../../platform/tenancy.ts';
import type { AudienceEvent } from './audience.events.ts';

type Caller = CommandCaller<'audienceId'>;

export type AudienceCommand =
  | (Caller & { type: 'CreateAudience'; name: string })
  | (Caller & { type: 'RenameAudience'; name: string })
  | (Caller & { type: 'DeleteAudience' });

export type AudienceState =
  | { exists: false }
  | { exists: true; orgId: string; mode: Mode; name: string; deleted: boolean };

const owned = (state: AudienceState, c: Caller) => visibleTo(state, c, 'Audience', c.audienceId);

export const audienceDecider: Decider<AudienceCommand, AudienceEvent, AudienceState> = {
  initialState: { exists: false },
  evolve(state, event) {
    switch (event.type) {
      case 'AudienceCreated': {
        const { orgId, mode, name } = event.data;
        return { exists: true, orgId, mode, name, deleted: false };
      }
      case 'AudienceRenamed':
        return state.exists ? { ...state, name: event.data.name } : state;
      case 'AudienceDeleted':
        return state.exists ? { ...state, deleted: true } : state;
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateAudience': {
        if (state.exists) return [];
        const { audienceId, orgId, mode, name, at } = command;
        return [{ type: 'AudienceCreated', data: { audienceId, orgId, mode, name, createdAt: at } }];
      }
      case 'RenameAudience': {
        if (owned(state, command).name === command.name) return [];
        return [
          {
            type: 'AudienceRenamed',
            data: { audienceId: command.audienceId, name: command.name, renamedAt: command.at },
          },
        ];
      }
      case 'DeleteAudience':
        owned(state, command);
        return [{ type: 'AudienceDeleted', data: { audienceId: command.audienceId, deletedAt: command.at } }];
    }
  },
};
