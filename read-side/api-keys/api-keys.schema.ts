import type { Generated } from 'kysely';
import type { Migration } from '../../platform/db/migrations.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Permission, Plan } from '../../platform/tenancy.ts';
import type { Timestamp } from '../column-types.ts';

export interface OrganizationsTable {
  id: string;
  name: string;
  plan: Plan;
  created_at: Timestamp;
  /** Whether opens and clicks record the IP address and user agent (sealed). */
  track_client_details: Generated<boolean>;
}

/**
 * The plans an organization was on: each from `since` until the next row's (what a past month is billed on), in
 * the order of its stream (`revision`: two changes can share a time).
 */
export interface OrganizationPlansTable {
  org_id: string;
  revision: number;
  since: Timestamp;
  plan: Plan;
}

export interface ApiKeysTable {
  id: string;
  org_id: string;
  mode: Mode;
  name: string;
  permission: Permission;
  domain_id: string | null;
  key_prefix: string;
  /** SHA-256 of the key, hex. */
  key_hash: string;
  created_at: Timestamp;
  deleted_at: Timestamp | null;
}

export const apiKeysMigrations: Migration[] = [
  {
    id: 'api-keys-001',
    sql: `
CREATE TABLE IF NOT EXISTS organizations (
  id text PRIMARY KEY,
  name text NOT NULL,
  plan text NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS api_keys (
  id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  name text NOT NULL,
  permission text NOT NULL,
  domain_id text,
  key_prefix text NOT NULL,
  key_hash text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL,
  deleted_at timestamptz
);
CREATE INDEX IF NOT EXISTS api_keys_org ON api_keys (org_id, mode, id);`,
  },
  {
    id: 'api-keys-002',
    sql: 'ALTER TABLE organizations ADD COLUMN IF NOT EXISTS track_client_details boolean NOT NULL DEFAULT false',
  },
  {
    // Plan changes applied before this table existed are not in it: each organization's plan then counts from
    // the start (as every month was figured before); a rebuild of the projection (`projections rebuild
    // api_keys`) writes the whole history from the log.
    id: 'api-keys-003',
    sql: `
CREATE TABLE IF NOT EXISTS organization_plans (
  org_id text NOT NULL,
  revision integer NOT NULL,
  since timestamptz NOT NULL,
  plan text NOT NULL,
  PRIMARY KEY (org_id, revision)
);
INSERT INTO organization_plans (org_id, revision, since, plan)
SELECT id, -1, '-infinity', plan FROM organizations ON CONFLICT DO NOTHING`,
  },
];
