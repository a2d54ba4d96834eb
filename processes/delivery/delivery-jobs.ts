import type { Migration } from '../../platform/db/migrations.ts';
import type { DueTable } from '../../platform/due/due-sql.ts';

export const deliveryMigrations: Migration[] = [
  {
    id: 'delivery-001',
    sql: `CREATE TABLE IF NOT EXISTS delivery_jobs (
  email_id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  due_at timestamptz NOT NULL,
  claimed_until timestamptz
);
CREATE INDEX IF NOT EXISTS delivery_jobs_due ON delivery_jobs (due_at)`,
  },
];

/** "Look at this email at this time": the stream says who still needs an attempt. */
export type Job = { email_id: string; org_id: string; mode: 'live' };

export const DELIVERY_JOBS: DueTable = {
  table: 'delivery_jobs',
  key: { email_id: 'text' },
  dueAt: 'due_at',
  columns: ['org_id', 'mode'],
  // Renewed while a look goes on: after a crash, the jobs it held are taken again within half a minute.
  leaseMs: 30_000,
};
