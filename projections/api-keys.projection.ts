import type { ApiKeyEvent } from '../domain/api-keys/api-key.events.ts';
import type { OrganizationEvent } from '../domain/organizations/organization.events.ts';
import type { Projection } from './projection.ts';
import { insertRow, updateRow } from './rows.ts';

/** Organizations and their API keys: what authentication reads on every request. */
export const apiKeysProjection: Projection<ApiKeyEvent | OrganizationEvent> = {
  name: 'api_keys',
  tables: ['organizations', 'api_keys'],
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
        return insertRow(tx, 'organizations', {
          id: d.orgId,
          name: d.name,
          plan: d.plan,
          created_at: d.createdAt,
        });
      }
      case 'OrganizationPlanChanged':
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
