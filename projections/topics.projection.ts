import type { TopicEvent } from '../domain/topics/topic.events.ts';
import type { Projection } from './projection.ts';
import { insertRow, updateRow } from './rows.ts';

/** Topics as the API lists them; a deleted one keeps its row with `deleted_at`. */
export const topicsProjection: Projection<TopicEvent> = {
  name: 'topics',
  tables: ['topics'],
  types: ['TopicCreated', 'TopicUpdated', 'TopicDeleted'],
  async apply(tx, e) {
    switch (e.type) {
      case 'TopicCreated': {
        const d = e.data;
        return insertRow(tx, 'topics', {
          id: d.topicId,
          org_id: d.orgId,
          mode: d.mode,
          name: d.name,
          description: d.description,
          default_subscription: d.defaultSubscription,
          created_at: d.createdAt,
          updated_at: d.createdAt,
        });
      }
      case 'TopicUpdated': {
        const d = e.data;
        return updateRow(tx, 'topics', d.topicId, {
          name: d.name,
          description: d.description,
          updated_at: d.updatedAt,
        });
      }
      case 'TopicDeleted':
        return updateRow(tx, 'topics', e.data.topicId, { deleted_at: e.data.deletedAt });
    }
  },
};
