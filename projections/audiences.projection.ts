import type { AudienceEvent } from '../domain/audiences/audience.events.ts';
import type { Projection } from './projection.ts';
import { insertRow, updateRow } from './rows.ts';

/** Audiences as the API lists them; a deleted one keeps its row with `deleted_at`. */
export const audiencesProjection: Projection<AudienceEvent> = {
  name: 'audiences',
  tables: ['audiences'],
  types: ['AudienceCreated', 'AudienceRenamed', 'AudienceDeleted'],
  async apply(tx, e) {
    switch (e.type) {
      case 'AudienceCreated': {
        const d = e.data;
        return insertRow(tx, 'audiences', {
          id: d.audienceId,
          org_id: d.orgId,
          mode: d.mode,
          name: d.name,
          created_at: d.createdAt,
          updated_at: d.createdAt,
        });
      }
      case 'AudienceRenamed':
        return updateRow(tx, 'audiences', e.data.audienceId, {
          name: e.data.name,
          updated_at: e.data.renamedAt,
        });
      case 'AudienceDeleted':
        return updateRow(tx, 'audiences', e.data.audienceId, { deleted_at: e.data.deletedAt });
    }
  },
};
