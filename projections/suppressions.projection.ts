import { normaliseAddress, type SuppressionEvent } from '../write-side/suppressions/suppression.events.ts';
import type { Projection } from './projection.ts';

/** The suppression list that the API lists and the sending path checks (`isSuppressed`). */
export const suppressionsProjection: Projection<SuppressionEvent> = {
  name: 'suppressions',
  tables: ['suppressions'],
  types: ['SuppressionAdded', 'SuppressionRemoved'],
  async apply(tx, e) {
    switch (e.type) {
      case 'SuppressionAdded': {
        const d = e.data;
        await tx.query(
          `INSERT INTO suppressions (id, org_id, mode, email, email_lower, reason, source_email_id, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
          [
            d.suppressionId,
            d.orgId,
            d.mode,
            d.email,
            normaliseAddress(d.email),
            d.reason,
            d.sourceEmailId,
            d.createdAt,
          ],
        );
        return;
      }
      case 'SuppressionRemoved':
        await tx.query('UPDATE suppressions SET deleted_at = $2 WHERE id = $1', [
          e.data.suppressionId,
          e.data.removedAt,
        ]);
        return;
    }
  },
};
