import type { Migration } from '../../platform/db/migrations.ts';

/** `simulator_steps`: a due row per step the test-mode simulator has yet to play for an email's recipient (due-queue.ts). */
export const simulatorMigrations: Migration[] = [
  {
    id: 'simulator-001',
    sql: `CREATE TABLE IF NOT EXISTS simulator_steps (
  email_id text NOT NULL,
  recipient text NOT NULL,
  seq integer NOT NULL,
  org_id text NOT NULL,
  mode text NOT NULL,
  due_at timestamptz NOT NULL,
  step jsonb NOT NULL,
  claimed_until timestamptz,
  PRIMARY KEY (email_id, recipient, seq)
);
CREATE INDEX IF NOT EXISTS simulator_steps_due ON simulator_steps (due_at)`,
  },
];
