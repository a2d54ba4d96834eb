import { notFound } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { SuppressionEvent, SuppressionReason } from './suppression.events.ts';

export type SuppressionCommand =
  | ({ type: 'AddSuppression'; at: string } & Omit<
      Extract<SuppressionEvent, { type: 'SuppressionAdded' }>['data'],
      'createdAt'
    >)
  | { type: 'RemoveSuppression'; suppressionId: string; at: string };

export interface SuppressionRecord {
  suppressionId: string;
  email: string;
  reason: SuppressionReason;
  sourceEmailId: string | null;
  createdAt: string;
}

/** The stream is one address of one organization and mode; `active` is its current suppression, if any. */
export type SuppressionState = { active: SuppressionRecord | null };

export const suppressionDecider: Decider<SuppressionCommand, SuppressionEvent, SuppressionState> = {
  initialState: { active: null },
  evolve(state, event) {
    switch (event.type) {
      case 'SuppressionAdded': {
        const { suppressionId, email, reason, sourceEmailId, createdAt } = event.data;
        return { active: { suppressionId, email, reason, sourceEmailId, createdAt } };
      }
      case 'SuppressionRemoved':
        return state.active?.suppressionId === event.data.suppressionId ? { active: null } : state;
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'AddSuppression': {
        // Already suppressed: nothing to do; the caller answers with the existing record.
        if (state.active) return [];
        const { type: _, at, ...data } = command;
        return [{ type: 'SuppressionAdded', data: { ...data, createdAt: at } }];
      }
      case 'RemoveSuppression': {
        if (state.active?.suppressionId !== command.suppressionId)
          throw notFound('Suppression', command.suppressionId);
        return [
          {
            type: 'SuppressionRemoved',
            data: { suppressionId: command.suppressionId, removedAt: command.at },
          },
        ];
      }
    }
  },
};
