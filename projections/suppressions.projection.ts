import { normaliseAddress, type SuppressionEvent } from '../domain/suppressions/suppression.events.ts';
import type { Projection } from './projection.ts';
import { insertRow, updateRow } from './rows.ts';

/** The suppression list that the API lists and the sending path checks (`services.caches.suppressed`). */
export const suppressionsProjection: Projection<SuppressionEvent> = {
  name: 'suppressions',
  tables: ['suppressions'],
  types: ['SuppressionAdded', 'SuppressionRemoved'],
  async apply(tx, e) {
    switch (e.type) {
      case 'SuppressionAdded': {
        const d = e.data;
        return insertRow(tx, 'suppressions', {
          id: d.suppressionId,
          org_id: d.orgId,
          mode: d.mode,
          email: d.email,
          email_lower: normaliseAddress(d.email),
          reason: d.reason,
          source_email_id: d.sourceEmailId,
          created_at: d.createdAt,
        });
      }
      case 'SuppressionRemoved':
        return updateRow(tx, 'suppressions', e.data.suppressionId, { deleted_at: e.data.removedAt });
    }
  },
};
