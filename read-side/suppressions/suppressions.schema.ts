import type { SuppressionReason } from '../../domain/suppressions/suppression.events.ts';
import type { Migration } from '../../platform/db/migrations.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Timestamp } from '../column-types.ts';

export interface SuppressionsTable {
  id: string;
  org_id: string;
  mode: Mode;
  email: string;
  /** `email` in lower case: what a recipient is matched on. */
  email_lower: string;
  reason: SuppressionReason;
  source_email_id: string | null;
  created_at: Timestamp;
  deleted_at: Timestamp | null;
}

/** The suppression list; removed rows keep `deleted_at` so a replay or a late duplicate event stays harmless. */
export const suppressionsMigrations: Migration[] = [
  {
    id: 'suppressions-001',
    sql: `
CREATE TABLE IF NOT EXISTS suppressions (
  id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  email text NOT NULL,
  email_lower text NOT NULL,
  reason text NOT NULL,
  source_email_id text,
  created_at timestamptz NOT NULL,
  deleted_at timestamptz
);
CREATE INDEX IF NOT EXISTS suppressions_org ON suppressions (org_id, mode, id);
CREATE INDEX IF NOT EXISTS suppressions_address ON suppressions (org_id, mode, email_lower) WHERE deleted_at IS NULL;`,
  },
];
