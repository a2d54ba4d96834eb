import { currentRecords } from '../domain/domains/dns-records.ts';
import type { DomainEvent } from '../domain/domains/domain.events.ts';
import type { Transaction } from '../platform/db/database.ts';
import type { Projection } from './projection.ts';
import { insertRow, updateRow } from './rows.ts';

/** A domain's DNS records changed by a DKIM step (a key added, rotated, or its old record removable). */
const newRecords = (tx: Transaction, domainId: string, records: unknown, at: string) =>
  updateRow(tx, 'domains', domainId, { dns_records: JSON.stringify(records), updated_at: at });

/** Domains with their DNS records and status: the API's view, quota counts, sending and inbound look-ups. */
export const domainsProjection: Projection<DomainEvent> = {
  name: 'domains',
  tables: ['domains'],
  types: [
    'DomainAdded',
    'DomainVerificationChecked',
    'DomainVerified',
    'DomainUpdated',
    'DomainDkimRotationStarted',
    'DomainDkimKeyActivated',
    'DomainDkimKeyRemovable',
    'DomainDkimEd25519Added',
    'DomainDkimEd25519Activated',
    'DomainDeleted',
    'DomainPurged',
    'DomainRestored',
  ],
  async apply(tx, e) {
    switch (e.type) {
      case 'DomainAdded': {
        const d = e.data;
        return insertRow(tx, 'domains', {
          id: d.domainId,
          org_id: d.orgId,
          mode: d.mode,
          name: d.name,
          status: 'pending',
          region: d.region,
          open_tracking: d.openTracking,
          click_tracking: d.clickTracking,
          inbound_enabled: d.inboundEnabled,
          dns_records: JSON.stringify(currentRecords(d.name, d.records)),
          dkim_selector: d.dkim.selector,
          sealed_dkim_private_key: d.dkim.sealedPrivateKey,
          return_path_domain: d.returnPathDomain,
          tracking_domain: d.trackingDomain,
          created_at: d.addedAt,
          updated_at: d.addedAt,
        });
      }
      case 'DomainVerificationChecked': {
        const d = e.data;
        return updateRow(tx, 'domains', d.domainId, {
          status: d.status,
          dns_records: JSON.stringify(currentRecords(d.name, d.records)),
          simulated: d.simulated === true,
          last_checked_at: d.checkedAt,
          updated_at: d.checkedAt,
        });
      }
      case 'DomainVerified':
        return updateRow(tx, 'domains', e.data.domainId, { verified_at: e.data.verifiedAt });
      case 'DomainUpdated': {
        const d = e.data;
        return updateRow(tx, 'domains', d.domainId, {
          open_tracking: d.openTracking,
          click_tracking: d.clickTracking,
          inbound_enabled: d.inboundEnabled,
          impressum: d.impressum ? JSON.stringify(d.impressum) : null,
          dns_records: JSON.stringify(currentRecords(d.name, d.records)),
          updated_at: d.updatedAt,
        });
      }
      case 'DomainDkimRotationStarted':
        return newRecords(tx, e.data.domainId, e.data.records, e.data.startedAt);
      // The key that signs: delivery reads it from this row (outbound-message.ts).
      case 'DomainDkimKeyActivated': {
        const d = e.data;
        return updateRow(tx, 'domains', d.domainId, {
          dkim_selector: d.selector,
          sealed_dkim_private_key: d.sealedPrivateKey,
          dns_records: JSON.stringify(d.records),
          updated_at: d.activatedAt,
        });
      }
      case 'DomainDkimKeyRemovable':
        return newRecords(tx, e.data.domainId, e.data.records, e.data.removableAt);
      case 'DomainDkimEd25519Added':
        return newRecords(tx, e.data.domainId, e.data.records, e.data.addedAt);
      case 'DomainDkimEd25519Activated': {
        const d = e.data;
        return updateRow(tx, 'domains', d.domainId, {
          ed25519_dkim_selector: d.selector,
          sealed_ed25519_dkim_private_key: d.sealedPrivateKey,
          dns_records: JSON.stringify(d.records),
          updated_at: d.activatedAt,
        });
      }
      case 'DomainDeleted': {
        const d = e.data;
        return updateRow(tx, 'domains', d.domainId, {
          deleted_at: d.deletedAt,
          purge_after: d.purgeAfter,
          updated_at: d.deletedAt,
        });
      }
      case 'DomainPurged':
        await tx.query('DELETE FROM domains WHERE id = $1', [e.data.domainId]);
        return;
      case 'DomainRestored':
        return updateRow(tx, 'domains', e.data.domainId, {
          deleted_at: null,
          purge_after: null,
          updated_at: e.data.restoredAt,
        });
    }
  },
};
