import type { Migration } from '../../platform/db/migrations.ts';

/** `broadcast_expansions`: a due row per broadcast being expanded (due-queue.ts), worked by the broadcast process. */
export const broadcastExpansionMigrations: Migration[] = [
  {
    id: 'broadcast-expansion-001',
    sql: `CREATE TABLE IF NOT EXISTS broadcast_expansions (
  broadcast_id text PRIMARY KEY,
  due_at timestamptz NOT NULL,
  claimed_until timestamptz
);
CREATE INDEX IF NOT EXISTS broadcast_expansions_due ON broadcast_expansions (due_at)`,
  },
];
