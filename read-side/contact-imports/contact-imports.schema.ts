import type { Migration } from '../../platform/db/migrations.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Json, Timestamp } from '../column-types.ts';

/** Contact import jobs as the API shows them. */
export interface ContactImportsTable {
  id: string;
  org_id: string;
  mode: Mode;
  audience_id: string | null;
  status: 'queued' | 'running' | 'completed' | 'failed';
  bytes: number;
  rows_total: number | null;
  rows_processed: number;
  rows_created: number;
  rows_updated: number;
  rows_skipped: number;
  error: Json<{ line: number | null; message: string }> | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  finished_at: Timestamp | null;
}

/** The skipped rows a job lists (at most INVALID_ROWS_LISTED, the first ones). */
export interface ContactImportInvalidRowsTable {
  import_id: string;
  line: number;
  reason: string;
}

export const contactImportsMigrations: Migration[] = [
  {
    id: 'contact-imports-001',
    sql: `
CREATE TABLE IF NOT EXISTS contact_imports (
  id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  audience_id text,
  status text NOT NULL,
  bytes bigint NOT NULL,
  rows_total integer,
  rows_processed integer NOT NULL DEFAULT 0,
  rows_created integer NOT NULL DEFAULT 0,
  rows_updated integer NOT NULL DEFAULT 0,
  rows_skipped integer NOT NULL DEFAULT 0,
  error jsonb,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  finished_at timestamptz
);
CREATE TABLE IF NOT EXISTS contact_import_invalid_rows (
  import_id text NOT NULL,
  line integer NOT NULL,
  reason text NOT NULL,
  PRIMARY KEY (import_id, line)
);`,
  },
];
