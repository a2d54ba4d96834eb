import { describe, it } from 'vitest';
import { topicDecider } from '../../domain/topics/topic.decider.ts';
import type { TopicEvent } from '../../domain/topics/topic.events.ts';
import { itHidesFromOtherCallers, spec } from '../support/given-when-then.ts';

const caller = { topicId: 'top_1', orgId: 'org_1', mode: 'live' as const };
const created: TopicEvent = {
  type: 'TopicCreated',
  data: {
    ...caller,
    name: 'Product news',
    description: null,
    defaultSubscription: 'opt_out',
    createdAt: 'T1',
  },
};
const create = {
  ...caller,
  type: 'CreateTopic' as const,
  name: 'Product news',
  description: null,
  defaultSubscription: 'opt_out' as const,
  at: 'T1',
};
const del = { ...caller, type: 'DeleteTopic' as const, at: 'T3' };
const deleted: TopicEvent = { type: 'TopicDeleted', data: { topicId: 'top_1', deletedAt: 'T3' } };

describe('topic decider', () => {
  it('creates a topic, once', () => {
    spec(topicDecider).given([]).when(create).then([created]);
    spec(topicDecider).given([created]).when(create).then([]);
  });

  it('renames and describes it; a change to nothing appends nothing', () => {
    spec(topicDecider)
      .given([created])
      .when({ ...caller, type: 'UpdateTopic', description: 'Monthly', at: 'T2' })
      .then([
        {
          type: 'TopicUpdated',
          data: { topicId: 'top_1', name: 'Product news', description: 'Monthly', updatedAt: 'T2' },
        },
      ]);
    spec(topicDecider)
      .given([created])
      .when({ ...caller, type: 'UpdateTopic', name: 'Product news', at: 'T2' })
      .then([]);
  });

  it('deletes it; a deleted topic, or one never created, is not found', () => {
    spec(topicDecider).given([created]).when(del).then([deleted]);
    spec(topicDecider)
      .given([created, deleted])
      .when({ ...caller, type: 'UpdateTopic', name: 'x', at: 'T4' })
      .thenFails('not_found');
    spec(topicDecider).given([]).when(del).thenFails('not_found');
  });
  itHidesFromOtherCallers(topicDecider, [created], del);
});
