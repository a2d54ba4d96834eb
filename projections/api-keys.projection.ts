import type { ApiKeyEvent } from '../write-side/api-keys/api-key.events.ts';
import type { OrganizationEvent } from '../write-side/organizations/organization.events.ts';
import type { Projection } from './projection.ts';

/** Organizations and their API keys: what authentication reads on every request. */
export const apiKeysProjection: Projection<ApiKeyEvent | OrganizationEvent> = {
  name: 'api_keys',
  tables: ['organizations', 'api_keys'],
  types: ['OrganizationCreated', 'OrganizationPlanChanged', 'ApiKeyCreated', 'ApiKeyDeleted'],
  async apply(tx, e) {
    switch (e.type) {
      case 'OrganizationCreated':
        await tx.query(
          `INSERT INTO organizations (id, name, plan, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING`,
          [e.data.orgId, e.data.name, e.data.plan, e.data.createdAt],
        );
        return;
      case 'OrganizationPlanChanged':
        await tx.query('UPDATE organizations SET plan = $2 WHERE id = $1', [e.data.orgId, e.data.plan]);
        return;
      case 'ApiKeyCreated': {
        const d = e.data;
        await tx.query(
          `INSERT INTO api_keys (id, org_id, mode, name, permission, domain_id, key_prefix, key_hash, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING`,
          [d.keyId, d.orgId, d.mode, d.name, d.permission, d.domainId, d.keyPrefix, d.keyHash, d.createdAt],
        );
        return;
      }
      case 'ApiKeyDeleted':
        await tx.query('UPDATE api_keys SET deleted_at = $2 WHERE id = $1', [e.data.keyId, e.data.deletedAt]);
        return;
    }
  },
};
