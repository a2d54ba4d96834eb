import type { AudienceEvent } from '../write-side/audiences/audience.events.ts';
import type { Projection } from './projection.ts';

/** Audiences as the API lists them; a deleted one keeps its row with `deleted_at`. */
export const audiencesProjection: Projection<AudienceEvent> = {
  name: 'audiences',
  tables: ['audiences'],
  types: ['AudienceCreated', 'AudienceRenamed', 'AudienceDeleted'],
  async apply(tx, e) {
    switch (e.type) {
      case 'AudienceCreated': {
        const d = e.data;
        await tx.query(
          `INSERT INTO audiences (id, org_id, mode, name, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (id) DO NOTHING`,
          [d.audienceId, d.orgId, d.mode, d.name, d.createdAt],
        );
        return;
      }
      case 'AudienceRenamed':
        await tx.query('UPDATE audiences SET name = $2, updated_at = $3 WHERE id = $1', [
          e.data.audienceId,
          e.data.name,
          e.data.renamedAt,
        ]);
        return;
      case 'AudienceDeleted':
        await tx.query('UPDATE audiences SET deleted_at = $2 WHERE id = $1', [
          e.data.audienceId,
          e.data.deletedAt,
        ]);
        return;
    }
  },
};
