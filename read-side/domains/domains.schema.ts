import type { DnsRecord, DomainStatus, Impressum } from '../../domain/domains/domain.events.ts';
import type { Migration } from '../../platform/db/migrations.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Json, Timestamp } from '../column-types.ts';

export interface DomainsTable {
  id: string;
  org_id: string;
  mode: Mode;
  name: string;
  status: DomainStatus;
  region: string;
  open_tracking: boolean;
  click_tracking: boolean;
  inbound_enabled: boolean;
  dns_records: Json<DnsRecord[]>;
  impressum: Json<Impressum> | null;
  dkim_selector: string;
  sealed_dkim_private_key: string;
  /** The Ed25519 key that signs beside RSA once its record verified; null until then. */
  ed25519_dkim_selector: string | null;
  sealed_ed25519_dkim_private_key: string | null;
  return_path_domain: string;
  tracking_domain: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  verified_at: Timestamp | null;
  last_checked_at: Timestamp | null;
  /** The last check was a test-mode simulation (no DNS looked up): such a domain holds no name. */
  simulated: boolean;
  deleted_at: Timestamp | null;
  purge_after: Timestamp | null;
}

export const domainsMigrations: Migration[] = [
  {
    id: 'domains-001',
    sql: `
CREATE TABLE IF NOT EXISTS domains (
  id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  name text NOT NULL,
  status text NOT NULL,
  region text NOT NULL,
  open_tracking boolean NOT NULL,
  click_tracking boolean NOT NULL,
  inbound_enabled boolean NOT NULL,
  dns_records jsonb NOT NULL,
  impressum jsonb,
  dkim_selector text NOT NULL,
  sealed_dkim_private_key text NOT NULL,
  return_path_domain text NOT NULL,
  tracking_domain text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  verified_at timestamptz,
  last_checked_at timestamptz,
  deleted_at timestamptz,
  purge_after timestamptz
);
CREATE INDEX IF NOT EXISTS domains_org ON domains (org_id, mode, id);
CREATE INDEX IF NOT EXISTS domains_name ON domains (name);
CREATE INDEX IF NOT EXISTS domains_recheck ON domains (last_checked_at) WHERE deleted_at IS NULL;`,
  },
  {
    id: 'domains-002',
    sql: `ALTER TABLE domains ADD COLUMN IF NOT EXISTS simulated boolean NOT NULL DEFAULT false;`,
  },
  {
    id: 'domains-003',
    sql: `
ALTER TABLE domains ADD COLUMN IF NOT EXISTS ed25519_dkim_selector text;
ALTER TABLE domains ADD COLUMN IF NOT EXISTS sealed_ed25519_dkim_private_key text;`,
  },
];
