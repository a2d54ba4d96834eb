import type { Migration } from '../../platform/db/migrations.ts';

/**
 * The delivery queue's tables, shared by every worker process: `delivery_jobs`, a due row per email and destination
 * (delivery-jobs.ts), `delivery_queues` (one per organization and lane), and what each destination last answered
 * (`delivery_destinations`, `delivery_replies`: the queue view).
 */
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
  {
    // A job per (email, destination); a job of the earlier shape (every destination, '') is split at its look.
    id: 'delivery-002',
    sql: `ALTER TABLE delivery_jobs
  ADD COLUMN destination text NOT NULL DEFAULT '',
  ADD COLUMN lane text NOT NULL DEFAULT 'transactional',
  ADD COLUMN queue text,
  ADD COLUMN queued_at timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN expedite boolean NOT NULL DEFAULT false,
  ADD COLUMN give_up boolean NOT NULL DEFAULT false;
UPDATE delivery_jobs SET queue = org_id || ':transactional';
ALTER TABLE delivery_jobs ALTER COLUMN queue SET NOT NULL,
  DROP CONSTRAINT delivery_jobs_pkey, ADD PRIMARY KEY (email_id, destination);
DROP INDEX IF EXISTS delivery_jobs_due;
CREATE INDEX delivery_jobs_queue_due ON delivery_jobs (queue, due_at);
CREATE INDEX delivery_jobs_destination ON delivery_jobs (destination);
CREATE TABLE delivery_queues (queue text PRIMARY KEY);
INSERT INTO delivery_queues SELECT DISTINCT queue FROM delivery_jobs;
CREATE TABLE delivery_destinations (
  org_id text NOT NULL,
  mode text NOT NULL,
  destination text NOT NULL,
  grp text NOT NULL DEFAULT '',
  last_response text,
  last_code int,
  last_classification text,
  last_at timestamptz,
  PRIMARY KEY (org_id, mode, destination)
);
CREATE INDEX delivery_destinations_destination ON delivery_destinations (destination);
CREATE TABLE delivery_replies (
  org_id text NOT NULL,
  mode text NOT NULL,
  destination text NOT NULL,
  at timestamptz NOT NULL,
  smtp_code int,
  response text NOT NULL,
  classification text
);
CREATE INDEX delivery_replies_destination ON delivery_replies (org_id, mode, destination, at)`,
  },
  {
    // The claim reads the destinations of the groups held now (few) once, rather than a job's own for each job.
    id: 'delivery-003',
    sql: 'CREATE INDEX delivery_destinations_grp ON delivery_destinations (grp)',
  },
];
