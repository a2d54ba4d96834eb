import type { Migration } from '../../platform/db/migrations.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Timestamp } from '../column-types.ts';

/** A replaced signing secret (sealed) and the end of its overlap, in webhook_endpoints.previous_secrets. */
export interface PreviousSecret {
  sealed_secret: string;
  valid_until: string;
}

/** An endpoint as the webhook process sees it at its checkpoint, with its delivery health. */
export interface WebhookEndpointsTable {
  webhook_id: string;
  org_id: string;
  mode: Mode;
  url: string;
  events: string[];
  active: boolean;
  deleted: boolean;
  sealed_secret: string;
  /** The replaced secrets that sign alongside until their `valid_until` (ISO 8601), newest first. */
  previous_secrets: PreviousSecret[];
  consecutive_failures: number;
  total_failures: string;
  exhausted_streak: number;
  last_success_at: Timestamp | null;
  last_failure_at: Timestamp | null;
}

export interface WebhookDeliveriesTable {
  webhook_id: string;
  id: string;
  org_id: string;
  mode: Mode;
  source_key: string;
  event_type: string;
  body: string;
  status: (typeof DELIVERY_STATUSES)[number];
  attempts: number;
  next_attempt_at: Timestamp;
  claim_token: string | null;
  claimed_until: Timestamp | null;
  last_response_status: number | null;
  last_error: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  completed_at: Timestamp | null;
}

export interface WebhookAttemptsTable {
  delivery_id: string;
  id: string;
  attempt: number;
  attempted_at: Timestamp;
  response_status: number | null;
  latency_ms: number;
  response_excerpt: string | null;
  error: string | null;
}

/** The delivery log's tables by name (`readModels(db).withTables<DeliveryLog>()`). */
export type DeliveryLog = {
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
};

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'exhausted', 'canceled'] as const;

/**
 * The webhook delivery log, read by `GET /v1/webhooks/{id}` and `/deliveries`, written only by the webhook
 * process (processes/webhooks/), which derives it from the log in order and from delivery attempts: it is never
 * rebuilt, since replaying it would resend webhooks.
 * - webhook_endpoints: each endpoint's configuration as of the fan-out's checkpoint, plus its delivery health.
 * - webhook_deliveries: the outbox, one row per (webhook, source event), its id derived from the two, written
 *   by the fan-out with its checkpoint's move and claimed by dispatchers as a due table (platform/due/due-queue.ts;
 *   the lease in claimed_until and claim_token, columns no index covers, so that a claim can be a HOT update: half
 *   of each page is left free for it). Its primary key (webhook_id, id) is also what the delivery log pages through.
 * - webhook_attempts: every HTTP attempt, in the order they were recorded.
 * A delivery that ended (any status but pending) is deleted with its attempts WEBHOOK_DELIVERY_RETENTION_DAYS after
 * it ended, by the retention process (processes/retention/webhook-deliveries.ts): the one writer besides the webhook
 * process, and it deletes only rows no dispatcher holds.
 */
export const deliveryLogMigrations: Migration[] = [
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
)`,
  },
  {
    // Every attempt has a row of webhook_attempts: a first attempt that succeeded moves there from its delivery.
    // A delivery's lease is a due table's (platform/due/due-queue.ts).
    id: 'delivery-log-002',
    sql: `
INSERT INTO webhook_attempts (delivery_id, attempt, attempted_at, response_status, latency_ms, response_excerpt)
SELECT id, 1, completed_at, last_response_status, first_latency_ms, first_response_excerpt FROM webhook_deliveries
WHERE first_latency_ms IS NOT NULL;
ALTER TABLE webhook_deliveries DROP COLUMN first_latency_ms, DROP COLUMN first_response_excerpt;
ALTER TABLE webhook_deliveries RENAME COLUMN leased_until TO claimed_until`,
  },
  {
    // The retention process finds ended deliveries by when they ended (processes/retention/webhook-deliveries.ts).
    // A claim changes neither column, so it stays a HOT update.
    id: 'delivery-log-003',
    sql: `CREATE INDEX webhook_deliveries_ended ON webhook_deliveries (completed_at) WHERE status <> 'pending'`,
  },
  {
    // Every replaced secret still in its overlap signs, not only the last one (WebhookSecretRotated.olderSecrets).
    id: 'delivery-log-004',
    sql: `
ALTER TABLE webhook_endpoints ADD COLUMN previous_secrets jsonb NOT NULL DEFAULT '[]';
UPDATE webhook_endpoints SET previous_secrets = jsonb_build_array(jsonb_build_object(
  'sealed_secret', previous_sealed_secret,
  'valid_until', to_char(previous_valid_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')))
WHERE previous_sealed_secret IS NOT NULL AND previous_valid_until IS NOT NULL;
ALTER TABLE webhook_endpoints DROP COLUMN previous_sealed_secret, DROP COLUMN previous_valid_until`,
  },
];
