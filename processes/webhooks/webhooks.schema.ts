import type { Migration } from '../../platform/db/migrations.ts';

/**
 * The webhook process's own tables, beside the delivery log it writes (read-side/webhooks/delivery-log.schema.ts).
 * - webhook_replays: operator replays, a due table (due-queue.ts) worked in batches of the log, each batch
 *   committed with the replay's cursor; a replay's row goes once it reached its end.
 * - webhook_email_summaries: from/to/subject/tags of each email, taken from its first event by the fan-out in the
 *   transaction that moves its checkpoint; the events of an email after its first need them for their payloads.
 *   Kept SUMMARY_KEEP_DAYS from `recorded_at` (email-summaries.ts); an email's stream has them after that.
 */
export const webhookProcessMigrations: Migration[] = [
  {
    id: 'webhook-replays-001',
    sql: `
CREATE TABLE IF NOT EXISTS webhook_replays (
  id text PRIMARY KEY,
  webhook_id text NOT NULL,
  since timestamptz NOT NULL,
  until timestamptz,
  up_to text NOT NULL,
  cursor text NOT NULL DEFAULT '',
  replayed integer NOT NULL DEFAULT 0,
  done boolean NOT NULL DEFAULT false,
  requested_at timestamptz NOT NULL
);
DELETE FROM webhook_replays WHERE done;
ALTER TABLE webhook_replays DROP COLUMN done, DROP COLUMN replayed, ADD COLUMN claimed_until timestamptz;
CREATE TABLE webhook_email_summaries (
  email_id text PRIMARY KEY,
  summary jsonb NOT NULL
)`,
  },
  {
    id: 'webhook-email-summaries-002',
    sql: `
ALTER TABLE webhook_email_summaries ADD COLUMN recorded_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX webhook_email_summaries_recorded_at ON webhook_email_summaries (recorded_at)`,
  },
];
