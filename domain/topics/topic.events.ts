import type { Mode } from '../../platform/eventstore/types.ts';

/**
 * `opt_in`: contacts get the topic's broadcasts unless they opt out; `opt_out`: only contacts who opted in get
 * them (docs/audiences.md).
 */
export type DefaultSubscription = 'opt_in' | 'opt_out';

export type TopicEvent =
  | {
      type: 'TopicCreated';
      data: {
        topicId: string;
        orgId: string;
        mode: Mode;
        name: string;
        description: string | null;
        defaultSubscription: DefaultSubscription;
        createdAt: string;
      };
    }
  /** The name and description as they are now (the default subscription is fixed at creation). */
  | {
      type: 'TopicUpdated';
      data: { topicId: string; name: string; description: string | null; updatedAt: string };
    }
  | { type: 'TopicDeleted'; data: { topicId: string; deletedAt: string } };

export const topicStream = (topicId: string) => `topic-${topicId}`;
