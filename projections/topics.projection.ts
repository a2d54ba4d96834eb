import type { TopicEvent } from '../write-side/topics/topic.events.ts';
import type { Projection } from './projection.ts';

/** Topics as the API lists them; a deleted one keeps its row with `deleted_at`. */
export const topicsProjection: Projection<TopicEvent> = {
  name: 'topics',
  tables: ['topics'],
  types: ['TopicCreated', 'TopicUpdated', 'TopicDeleted'],
  async apply(tx, e) {
    switch (e.type) {
      case 'TopicCreated': {
        const d = e.data;
        await tx.query(
          `INSERT INTO topics (id, org_id, mode, name, description, default_subscription, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (id) DO NOTHING`,
          [d.topicId, d.orgId, d.mode, d.name, d.description, d.defaultSubscription, d.createdAt],
        );
        return;
      }
      case 'TopicUpdated':
        await tx.query('UPDATE topics SET name = $2, description = $3, updated_at = $4 WHERE id = $1', [
          e.data.topicId,
          e.data.name,
          e.data.description,
          e.data.updatedAt,
        ]);
        return;
      case 'TopicDeleted':
        await tx.query('UPDATE topics SET deleted_at = $2 WHERE id = $1', [e.data.topicId, e.data.deletedAt]);
        return;
    }
  },
};
