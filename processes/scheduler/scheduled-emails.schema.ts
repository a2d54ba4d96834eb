import type { Migration } from '../../platform/db/migrations.ts';

/** `scheduled_emails`: a due row per email scheduled for later (due-queue.ts), released by the scheduler when it falls due. */
export const schedulerMigrations: Migration[] = [
  {
    id: 'scheduler-001',
    sql: `CREATE TABLE IF NOT EXISTS scheduled_emails (
  email_id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  send_at timestamptz NOT NULL,
  claimed_until timestamptz
);
CREATE INDEX IF NOT EXISTS scheduled_emails_due ON scheduled_emails (send_at)`,
  },
];
