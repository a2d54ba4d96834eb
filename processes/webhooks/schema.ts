import type { Migration } from '../../platform/db/migrations.ts';
import { RECORD_SUCCESSES_FUNCTION } from './successes.ts';

/**
 * State of the webhook process manager. It is derived from the log in order (fan-out checkpoint) and from
 * delivery attempts, so it is never rebuilt: replaying it would resend webhooks.
 * - webhook_endpoints: each endpoint's configuration as of the fan-out's checkpoint, plus dispatcher health.
 * - webhook_fanout_checkpoints: the fan-out's checkpoint, its owner while outcomes are awaited, how far it sent.
 * - webhook_deliveries: one row per (webhook, source event), its id derived from the two, written with the first
 *   outcome of a delivery handed over by the fan-out, or before it for a claim (FOR UPDATE SKIP LOCKED). A first
 *   attempt that succeeded is kept in the row.
 * - webhook_attempts: every other HTTP attempt, for the delivery log.
 * - webhook_legacy_delivery_ids: the ids of deliveries recorded before ids were derived, for replays.
 * - webhook_replays: operator replays, worked through the log in batches with a cursor of their own.
 */
export const webhookProcessMigrations: Migration[] = [
  {
    id: 'webhook-process-001',
    sql: `
CREATE TABLE IF NOT EXISTS webhook_fanout_checkpoints (
  name text PRIMARY KEY,
  position text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO webhook_fanout_checkpoints (name, position) VALUES ('webhook_fanout', '') ON CONFLICT (name) DO NOTHING;
CREATE TABLE IF NOT EXISTS webhook_endpoints (
  webhook_id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  url text NOT NULL,
  events text[] NOT NULL,
  active boolean NOT NULL,
  deleted boolean NOT NULL DEFAULT false,
  sealed_secret text NOT NULL,
  previous_sealed_secret text,
  previous_valid_until timestamptz,
  consecutive_failures integer NOT NULL DEFAULT 0,
  total_failures bigint NOT NULL DEFAULT 0,
  exhausted_streak integer NOT NULL DEFAULT 0,
  last_success_at timestamptz,
  last_failure_at timestamptz
);
CREATE INDEX IF NOT EXISTS webhook_endpoints_org ON webhook_endpoints (org_id, mode);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id text PRIMARY KEY,
  webhook_id text NOT NULL,
  org_id text NOT NULL,
  mode text NOT NULL,
  source_key text NOT NULL,
  event_type text NOT NULL,
  body text NOT NULL,
  status text NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL,
  claim_token text,
  leased_until timestamptz,
  last_response_status integer,
  last_error text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  completed_at timestamptz,
  UNIQUE (webhook_id, source_key)
) WITH (fillfactor = 70);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (webhook_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id);
CREATE TABLE IF NOT EXISTS webhook_attempts (
  id bigserial PRIMARY KEY,
  delivery_id text NOT NULL,
  attempt integer NOT NULL,
  attempted_at timestamptz NOT NULL,
  response_status integer,
  latency_ms integer NOT NULL,
  response_excerpt text,
  error text
);
CREATE INDEX IF NOT EXISTS webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
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
);`,
  },
  {
    // One index fewer on each table, the writes' main cost: the deliveries' primary key is (webhook_id, id), which
    // the delivery log pages through, and the attempts' is (delivery_id, id), which it reads them by.
    id: 'webhook-process-002',
    sql: `
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_pkey;
ALTER TABLE webhook_deliveries ADD PRIMARY KEY (webhook_id, id);
DROP INDEX IF EXISTS webhook_deliveries_webhook;
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_pkey;
ALTER TABLE webhook_attempts ADD PRIMARY KEY (delivery_id, id);
DROP INDEX IF EXISTS webhook_attempts_delivery;`,
  },
  {
    // Delivery ids are now derived from (webhook, source event) (delivery-ids.ts): the primary key keeps one
    // delivery per pair, and the unique index on (webhook_id, source_key), one more entry per insert and update,
    // goes. Deliveries recorded before keep their random ids; a replay finds them here, to resend them under those.
    // A first attempt that succeeds is kept in the delivery row, not in an attempt row of its own.
    id: 'webhook-process-003',
    sql: `
CREATE TABLE IF NOT EXISTS webhook_legacy_delivery_ids (
  webhook_id text NOT NULL,
  source_key text NOT NULL,
  id text NOT NULL,
  PRIMARY KEY (webhook_id, source_key)
);
INSERT INTO webhook_legacy_delivery_ids (webhook_id, source_key, id)
  SELECT webhook_id, source_key, id FROM webhook_deliveries ON CONFLICT DO NOTHING;
ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_webhook_id_source_key_key;
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS first_latency_ms integer;
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS first_response_excerpt text;`,
  },
  {
    // Deliveries the fan-out hands to the dispatcher of its process are written once, with their outcome
    // (fan-out-checkpoint.ts): the checkpoint moves past an event only once every such delivery of it is
    // recorded, a lease on the checkpoint row keeps other fan-outs off meanwhile, and `sent_up_to` tells how far
    // deliveries may have been sent, to look those up before sending again after a restart. Successes are
    // recorded by a function (successes.ts) that also inserts the rows of deliveries written for the first time;
    // databases that applied 003 before this change have its one-parameter predecessor, dropped here.
    id: 'webhook-process-004',
    sql: `
DROP FUNCTION IF EXISTS webhook_record_successes(json);
ALTER TABLE webhook_fanout_checkpoints ADD COLUMN IF NOT EXISTS sent_up_to text NOT NULL DEFAULT '';
ALTER TABLE webhook_fanout_checkpoints ADD COLUMN IF NOT EXISTS owner text;
ALTER TABLE webhook_fanout_checkpoints ADD COLUMN IF NOT EXISTS owner_until timestamptz;
UPDATE webhook_fanout_checkpoints SET sent_up_to = position;
${RECORD_SUCCESSES_FUNCTION}`,
  },
];
