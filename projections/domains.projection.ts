import type { DomainEvent } from '../write-side/domains/domain.events.ts';
import type { Projection } from './projection.ts';

/** Domains with their DNS records and status: the API's view, quota counts, sending and inbound look-ups. */
export const domainsProjection: Projection<DomainEvent> = {
  name: 'domains',
  tables: ['domains'],
  types: [
    'DomainAdded',
    'DomainVerificationChecked',
    'DomainVerified',
    'DomainUpdated',
    'DomainDeleted',
    'DomainPurged',
    'DomainRestored',
  ],
  async apply(tx, e) {
    switch (e.type) {
      case 'DomainAdded': {
        const d = e.data;
        await tx.query(
          `INSERT INTO domains (id, org_id, mode, name, status, region, open_tracking, click_tracking, inbound_enabled,
             dns_records, dkim_selector, sealed_dkim_private_key, return_path_domain, tracking_domain, created_at, updated_at)
           VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7, $8, $9::jsonb, $10, $11, $12, $13, $14, $14)
           ON CONFLICT (id) DO NOTHING`,
          [
            d.domainId,
            d.orgId,
            d.mode,
            d.name,
            d.region,
            d.openTracking,
            d.clickTracking,
            d.inboundEnabled,
            JSON.stringify(d.records),
            d.dkim.selector,
            d.dkim.sealedPrivateKey,
            d.returnPathDomain,
            d.trackingDomain,
            d.addedAt,
          ],
        );
        return;
      }
      case 'DomainVerificationChecked':
        await tx.query(
          `UPDATE domains SET status = $2, dns_records = $3::jsonb, last_checked_at = $4, updated_at = $4 WHERE id = $1`,
          [e.data.domainId, e.data.status, JSON.stringify(e.data.records), e.data.checkedAt],
        );
        return;
      case 'DomainVerified':
        await tx.query('UPDATE domains SET verified_at = $2 WHERE id = $1', [
          e.data.domainId,
          e.data.verifiedAt,
        ]);
        return;
      case 'DomainUpdated': {
        const d = e.data;
        await tx.query(
          `UPDATE domains SET open_tracking = $2, click_tracking = $3, inbound_enabled = $4, impressum = $5::jsonb,
             dns_records = $6::jsonb, updated_at = $7 WHERE id = $1`,
          [
            d.domainId,
            d.openTracking,
            d.clickTracking,
            d.inboundEnabled,
            d.impressum ? JSON.stringify(d.impressum) : null,
            JSON.stringify(d.records),
            d.updatedAt,
          ],
        );
        return;
      }
      case 'DomainDeleted':
        await tx.query(
          'UPDATE domains SET deleted_at = $2, purge_after = $3, updated_at = $2 WHERE id = $1',
          [e.data.domainId, e.data.deletedAt, e.data.purgeAfter],
        );
        return;
      case 'DomainPurged':
        await tx.query('DELETE FROM domains WHERE id = $1', [e.data.domainId]);
        return;
      case 'DomainRestored':
        await tx.query(
          'UPDATE domains SET deleted_at = NULL, purge_after = NULL, updated_at = $2 WHERE id = $1',
          [e.data.domainId, e.data.restoredAt],
        );
        return;
    }
  },
};
