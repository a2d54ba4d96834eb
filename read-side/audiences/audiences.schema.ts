import type { Migration } from '../../platform/db/migrations.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Timestamp } from '../column-types.ts';

export interface AudiencesTable {
  id: string;
  org_id: string;
  mode: Mode;
  name: string;
  created_at: Timestamp;
  updated_at: Timestamp;
  deleted_at: Timestamp | null;
}

export const audiencesMigrations: Migration[] = [
  {
    id: 'audiences-001',
    sql: `
CREATE TABLE IF NOT EXISTS audiences (
  id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  name text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz
);
CREATE INDEX IF NOT EXISTS audiences_org ON audiences (org_id, mode, id) WHERE deleted_at IS NULL;`,
  },
];
