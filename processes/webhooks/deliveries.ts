import { literal, type Queryable, type Transaction } from '../../platform/db/database.ts';
import { joinJsonTexts, jsonTextsSql } from '../../platform/db/json-texts.ts';
import type { DueTable } from '../../platform/due/due-sql.ts';
import type { PreviousSecret } from '../../read-side/webhooks/delivery-log.schema.ts';
import { deliveryId } from './delivery-ids.ts';
import { envelope } from './public-events.v1.ts';

/** Wakes dispatchers (in any process) when deliveries are recorded, due now, or an endpoint changed. */
export const DELIVERIES_CHANNEL = 'postline_webhook_deliveries';

/**
 * The NOTIFY payload that says an endpoint was deleted, disabled, or given another url or secret: dispatchers then
 * look again at the endpoints of the deliveries they hold waiting (an empty payload: new deliveries are due).
 */
export const ENDPOINT_CHANGED = 'endpoint';

/** Wakes dispatchers once `tx` commits: the NOTIFY goes with the COMMIT, in its round trip. */
export const wakeDispatchersAtCommit = (tx: Transaction, payload: '' | typeof ENDPOINT_CHANGED = ''): void =>
  tx.atCommit(`SELECT pg_notify(${literal(DELIVERIES_CHANNEL)}, ${literal(payload)})`);

export interface NewDelivery {
  id: string;
  webhookId: string;
  orgId: string;
  mode: string;
  /** `<stream>@<revision>` of the source event (the id is derived from it and the webhook id). */
  sourceKey: string;
  eventType: string;
  body: string;
}

/** A delivery's source: `<stream>@<revision>` of its event. */
export const sourceKeyOf = (event: { streamId: string; revision: number }): string =>
  `${event.streamId}@${event.revision}`;

/**
 * A delivery of one event to one endpoint, its body frozen now so every attempt sends the same bytes. Its id is
 * derived from the endpoint and the event (delivery-ids.ts).
 */
export function newDelivery(
  endpoint: { webhookId: string; orgId: string; mode: string },
  source: { streamId: string; revision: number; createdAt: Date },
  type: string,
  data: Record<string, unknown>,
): NewDelivery {
  const sourceKey = sourceKeyOf(source);
  const id = deliveryId(endpoint.webhookId, sourceKey, source.createdAt);
  return {
    id,
    webhookId: endpoint.webhookId,
    orgId: endpoint.orgId,
    mode: endpoint.mode,
    sourceKey,
    eventType: type,
    body: envelope(type, id, source.createdAt, data),
  };
}

/**
 * The one statement that creates delivery rows, due at $2. The short fields come as JSON ($1, cheaper to build
 * than pg's escaped arrays), the bodies, JSON texts, apart ($3: json-texts.ts). A delivery that exists already
 * (its event fanned out or replayed before) is left as it is.
 */
const INSERT_SQL = `
INSERT INTO webhook_deliveries (id, webhook_id, org_id, mode, source_key, event_type, body, status, attempts,
  next_attempt_at, created_at, updated_at)
SELECT r.id, r.webhook_id, r.org_id, r.mode, r.source_key, r.event_type, r.body, 'pending', 0, $2, $2, $2
FROM ROWS FROM (
  json_to_recordset($1::json) AS (id text, webhook_id text, org_id text, mode text, source_key text, event_type text),
  ${jsonTextsSql(3)}
) AS r(id, webhook_id, org_id, mode, source_key, event_type, body)
ON CONFLICT (webhook_id, id) DO NOTHING
RETURNING id`;

/** Records deliveries, due at `now`; returns the ids of those that did not exist yet. */
export async function insertDeliveries(q: Queryable, rows: NewDelivery[], now: Date): Promise<string[]> {
  if (rows.length === 0) return [];
  const fields = rows.map((d) => ({
    id: d.id,
    webhook_id: d.webhookId,
    org_id: d.orgId,
    mode: d.mode,
    source_key: d.sourceKey,
    event_type: d.eventType,
  }));
  const bodies = joinJsonTexts(rows.map((d) => d.body));
  const { rows: written } = await q.query<{ id: string }>(INSERT_SQL, [JSON.stringify(fields), now, bodies]);
  return written.map((r) => r.id);
}

/**
 * Gives deliveries of one endpoint a fresh round of attempts, the first due at `due`: any of them for a retry
 * request, only finished ones for a replay (`finishedOnly`). Returns the ids reset; their earlier attempts stay in
 * the log.
 */
export async function resetDeliveries(
  tx: Transaction,
  webhookId: string,
  ids: string[],
  due: Date | string,
  finishedOnly: boolean,
): Promise<string[]> {
  if (ids.length === 0) return [];
  const { rows } = await tx.query<{ id: string }>(
    `UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = $3, claim_token = NULL,
       claimed_until = NULL, completed_at = NULL, updated_at = $3
     WHERE webhook_id = $1 AND id = ANY($2) AND (status <> 'pending' OR NOT $4)
     RETURNING id`,
    [webhookId, ids, due, finishedOnly],
  );
  return rows.map((r) => r.id);
}

/** A delivery's row as a claim returns it (due-queue.ts), with the claim's token. */
export interface DueDelivery {
  webhook_id: string;
  id: string;
  org_id: string;
  mode: 'live' | 'test';
  event_type: string;
  body: string;
  attempts: number;
  /** Outcomes are recorded only while the row still carries it: a delivery reset meanwhile is left alone. */
  claim_token: string;
}

/** What sending a delivery needs of its endpoint. */
export interface EndpointAddress {
  url: string;
  sealed_secret: string;
  /** Replaced secrets that still sign until their `valid_until`, newest first. */
  previous_secrets: PreviousSecret[];
}

/** A claimed delivery with what sending it needs of its endpoint. */
export type Claimed = DueDelivery & EndpointAddress;

/**
 * The deliveries as a due table: pending ones are due at their next attempt and go in groups by endpoint, of
 * active endpoints only, at most `perEndpoint` of one endpoint claimed by a process at once, so that one endpoint's
 * backlog cannot take every slot. A claim lasts past the request time-out and is renewed while its delivery waits.
 * The lease lives in columns no index covers, so a claim can be a HOT update that leaves the indexes alone.
 */
export const dueDeliveries = (o = { perEndpoint: 64, leaseMs: 60_000 }): DueTable => ({
  table: 'webhook_deliveries',
  key: { webhook_id: 'text', id: 'text' },
  dueAt: 'next_attempt_at',
  columns: ['org_id', 'mode', 'event_type', 'body', 'attempts'],
  where: `$row.status = 'pending'`,
  token: 'claim_token',
  leaseMs: o.leaseMs,
  groups: {
    column: 'webhook_id',
    perGroup: o.perEndpoint,
    of: { table: 'webhook_endpoints', key: 'webhook_id', where: '$row.active AND NOT $row.deleted' },
  },
});

/**
 * The address and secrets, as they are now, of those of these endpoints still active (neither disabled nor
 * deleted), in one statement: an endpoint missing from the answer gets no more deliveries.
 */
export async function activeEndpoints(
  q: Queryable,
  webhookIds: string[],
): Promise<Map<string, EndpointAddress>> {
  if (webhookIds.length === 0) return new Map();
  const { rows } = await q.query<EndpointAddress & { webhook_id: string }>(
    `SELECT webhook_id, url, sealed_secret, previous_secrets FROM webhook_endpoints
     WHERE webhook_id = ANY($1) AND active AND NOT deleted`,
    [webhookIds],
  );
  return new Map(rows.map(({ webhook_id, ...address }) => [webhook_id, address]));
}

/** Pending deliveries of endpoints switched off or deleted are canceled when they fall due; a replay can resend them. */
export async function cancelForInactiveEndpoints(q: Queryable, now: Date): Promise<void> {
  await q.query(
    `UPDATE webhook_deliveries d SET status = 'canceled', claim_token = NULL, claimed_until = NULL,
       last_error = 'the endpoint is disabled or deleted', updated_at = $1, completed_at = $1
     FROM webhook_endpoints e
     WHERE e.webhook_id = d.webhook_id AND (NOT e.active OR e.deleted) AND d.status = 'pending'
       AND d.next_attempt_at <= $1 AND (d.claimed_until IS NULL OR d.claimed_until < $1)`,
    [now],
  );
}
