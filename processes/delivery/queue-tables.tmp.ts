import type { Migration } from '../../platform/db/migrations.ts';

/**
 * TEMPORARY (branch `queue` only): the delivery tables of the fair-queue rework, so the queue view can be built
 * and tested before that rework lands. Its own migrations replace this file, which then goes, with its line in
 * bin/composition.ts.
 */
export const queueTablesTmpMigrations: Migration[] = [
  {
    id: 'queue-tables-tmp-001',
    sql: `
DROP TABLE IF EXISTS delivery_jobs;
CREATE TABLE delivery_jobs (
  email_id text,
  destination text,
  org_id text,
  mode text,
  lane text,
  queue text,
  due_at timestamptz,
  claimed_until timestamptz,
  queued_at timestamptz NOT NULL DEFAULT now(),
  expedite boolean NOT NULL DEFAULT false,
  give_up boolean NOT NULL DEFAULT false,
  PRIMARY KEY (email_id, destination)
);
CREATE INDEX IF NOT EXISTS delivery_jobs_due ON delivery_jobs (due_at);
CREATE TABLE IF NOT EXISTS delivery_destinations (
  org_id text,
  mode text,
  destination text,
  grp text NOT NULL DEFAULT '',
  last_response text,
  last_code int,
  last_classification text,
  last_at timestamptz,
  PRIMARY KEY (org_id, mode, destination)
);
CREATE TABLE IF NOT EXISTS delivery_replies (
  org_id text,
  mode text,
  destination text,
  at timestamptz,
  smtp_code int,
  response text,
  classification text
);
CREATE TABLE IF NOT EXISTS shaping_groups (
  grp text PRIMARY KEY,
  held_until timestamptz,
  held_reason text
)`,
  },
];
