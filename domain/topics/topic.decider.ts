import { visibleTo } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { CommandCaller } from '../../platform/tenancy.ts';
import type { TopicEvent } from './topic.events.ts';

type Caller = CommandCaller<'topicId'>;

export type TopicCommand =
  | (Caller & { type: 'CreateTopic' } & Pick<
        Extract<TopicEvent, { type: 'TopicCreated' }>['data'],
        'name' | 'description' | 'defaultSubscription'
      >)
  | (Caller & { type: 'UpdateTopic'; name?: string; description?: string | null })
  | (Caller & { type: 'DeleteTopic' });

export type TopicState =
  | { exists: false }
  | { exists: true; orgId: string; mode: Mode; name: string; description: string | null; deleted: boolean };

const owned = (state: TopicState, c: Caller) => visibleTo(state, c, 'Topic', c.topicId);

export const topicDecider: Decider<TopicCommand, TopicEvent, TopicState> = {
  initialState: { exists: false },
  evolve(state, event) {
    switch (event.type) {
      case 'TopicCreated': {
        const { orgId, mode, name, description } = event.data;
        return { exists: true, orgId, mode, name, description, deleted: false };
      }
      case 'TopicUpdated':
        return state.exists
          ? { ...state, name: event.data.name, description: event.data.description }
          : state;
      case 'TopicDeleted':
        return state.exists ? { ...state, deleted: true } : state;
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateTopic': {
        if (state.exists) return [];
        const { type: _, at, ...data } = command;
        return [{ type: 'TopicCreated', data: { ...data, createdAt: at } }];
      }
      case 'UpdateTopic': {
        const topic = owned(state, command);
        const name = command.name ?? topic.name;
        const description = command.description === undefined ? topic.description : command.description;
        if (name === topic.name && description === topic.description) return [];
        return [
          {
            type: 'TopicUpdated',
            data: { topicId: command.topicId, name, description, updatedAt: command.at },
          },
        ];
      }
      case 'DeleteTopic':
        owned(state, command);
        return [{ type: 'TopicDeleted', data: { topicId: command.topicId, deletedAt: command.at } }];
    }
  },
};
