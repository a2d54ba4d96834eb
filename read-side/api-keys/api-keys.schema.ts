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
];
