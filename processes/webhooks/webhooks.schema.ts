import type { Migration } from '../../platform/db/migrations.ts';

/**
 * State of the webhook process manager. It is derived from the log in order (the fan-out's checkpoint is its row
 * in process_checkpoints) and from delivery attempts, so it is never rebuilt: replaying it would resend webhooks.
 * - webhook_endpoints: each endpoint's configuration as of the fan-out's checkpoint, plus dispatcher health.
 * - webhook_deliveries: the outbox, one row per (webhook, source event), its id derived from the two, written
 *   by the fan-out with its checkpoint's move and claimed by dispatchers (FOR UPDATE SKIP LOCKED, then a lease in
 *   claim_token and leased_until, columns no index covers, so that a claim can be a HOT update: half of each page
 *   is left free for it). Its primary key (webhook_id, id) is also what the delivery log pages through. A first
 *   attempt that succeeded is kept in the row (first_latency_ms, first_response_excerpt).
 * - webhook_attempts: every other HTTP attempt, for the delivery log.
 * - webhook_replays: operator replays, worked through the log in batches with a cursor of their own.
 */
export const webhookProcessMigrations: Migration[] = [
  {
    id: 'webhook-process-001',
    sql: `
CREATE TABLE webhook_endpoints (
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
CREATE INDEX webhook_endpoints_org ON webhook_endpoints (org_id, mode);
CREATE TABLE webhook_deliveries (
  webhook_id text NOT NULL,
  id text NOT NULL,
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
  first_latency_ms integer,
  first_response_excerpt text,
  PRIMARY KEY (webhook_id, id)
) WITH (fillfactor = 50);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (webhook_id, next_attempt_at) WHERE status = 'pending';
CREATE TABLE webhook_attempts (
  delivery_id text NOT NULL,
  id bigserial,
  attempt integer NOT NULL,
  attempted_at timestamptz NOT NULL,
  response_status integer,
  latency_ms integer NOT NULL,
  response_excerpt text,
  error text,
  PRIMARY KEY (delivery_id, id)
);
CREATE TABLE webhook_replays (
  id text PRIMARY KEY,
  webhook_id text NOT NULL,
  since timestamptz NOT NULL,
  until timestamptz,
  up_to text NOT NULL,
  cursor text NOT NULL DEFAULT '',
  replayed integer NOT NULL DEFAULT 0,
  done boolean NOT NULL DEFAULT false,
  requested_at timestamptz NOT NULL
)`,
  },
];
