import type { ApiKeyEvent } from '../domain/api-keys/api-key.events.ts';
import type { OrganizationEvent } from '../domain/organizations/organization.events.ts';
import type { Transaction } from '../platform/db/database.ts';
import type { Projection } from './projection.ts';
import { insertRow, updateRow } from './rows.ts';

/** A plan the organization is on from `since` (its stream's event `revision`); applied again, nothing. */
const planSince = (tx: Transaction, revision: number, orgId: string, since: string, plan: string) =>
  tx.query(
    `INSERT INTO organization_plans (org_id, revision, since, plan) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING`,
    [orgId, revision, since, plan],
  );

/** Organizations, the plans they were on, and their API keys: what authentication reads on every request. */
export const apiKeysProjection: Projection<ApiKeyEvent | OrganizationEvent> = {
  name: 'api_keys',
  tables: ['organizations', 'organization_plans', 'api_keys'],
  types: [
    'OrganizationCreated',
    'OrganizationPlanChanged',
    'OrganizationSettingsChanged',
    'ApiKeyCreated',
    'ApiKeyDeleted',
  ],
  async apply(tx, e) {
    switch (e.type) {
      case 'OrganizationCreated': {
        const d = e.data;
        await planSince(tx, e.revision, d.orgId, d.createdAt, d.plan);
        return insertRow(tx, 'organizations', {
          id: d.orgId,
          name: d.name,
          plan: d.plan,
          created_at: d.createdAt,
        });
      }
      case 'OrganizationPlanChanged':
        await planSince(tx, e.revision, e.data.orgId, e.data.changedAt, e.data.plan);
        return updateRow(tx, 'organizations', e.data.orgId, { plan: e.data.plan });
      case 'OrganizationSettingsChanged':
        return updateRow(tx, 'organizations', e.data.orgId, {
          track_client_details: e.data.trackClientDetails,
        });
      case 'ApiKeyCreated': {
        const d = e.data;
        return insertRow(tx, 'api_keys', {
          id: d.keyId,
          org_id: d.orgId,
          mode: d.mode,
          name: d.name,
          permission: d.permission,
          domain_id: d.domainId,
          key_prefix: d.keyPrefix,
          key_hash: d.keyHash,
          created_at: d.createdAt,
        });
      }
      case 'ApiKeyDeleted':
        return updateRow(tx, 'api_keys', e.data.keyId, { deleted_at: e.data.deletedAt });
    }
  },
};
