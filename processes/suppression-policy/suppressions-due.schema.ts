import type { Migration } from '../../platform/db/migrations.ts';

/** `suppressions_due`: a due row per (email, recipient) whose hard bounce or complaint the suppression policy suppresses. */
export const suppressionPolicyMigrations: Migration[] = [
  {
    id: 'suppression-policy-001',
    sql: `CREATE TABLE IF NOT EXISTS suppressions_due (
  email_id text NOT NULL,
  recipient text NOT NULL,
  org_id text NOT NULL,
  mode text NOT NULL,
  actor text NOT NULL,
  reason text NOT NULL,
  due_at timestamptz NOT NULL,
  claimed_until timestamptz,
  PRIMARY KEY (email_id, recipient)
);
CREATE INDEX IF NOT EXISTS suppressions_due_due ON suppressions_due (due_at)`,
  },
];
