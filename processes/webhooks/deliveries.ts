import { EventEmitter } from 'node:events';
import type { Queryable, Transaction } from '../../platform/db/database.ts';
import { deliveryId } from './delivery-ids.ts';
import type { Claimed } from './dispatcher.process.ts';
import { envelope } from './public-events.v1.ts';

/** Wakes dispatchers (in any process) when new work is recorded. */
export const DELIVERIES_CHANNEL = 'postline_webhook_deliveries';
/** Wakes the dispatchers of this process as soon as new work is committed, without waiting for the NOTIFY. */
export const deliveriesRecorded = new EventEmitter().setMaxListeners(0);

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
 * derived from the endpoint and the event (delivery-ids.ts), unless one was given (a delivery recorded before
 * ids were derived, replayed).
 */
export function newDelivery(
  endpoint: { webhookId: string; orgId: string; mode: string },
  source: { streamId: string; revision: number; createdAt: Date },
  type: string,
  data: Record<string, unknown>,
  legacyId?: string,
): NewDelivery {
  const sourceKey = sourceKeyOf(source);
  const id = legacyId ?? deliveryId(endpoint.webhookId, sourceKey, source.createdAt);
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
 * Bodies go to PostgreSQL as one parameter, joined by U+001E. Bodies are JSON text, in which that control
 * character is always escaped, so it cannot occur in one; PostgreSQL splits them far faster than it parses them as
 * JSON (about half the cost of the rows).
 */
export const joinBodies = (bodies: string[]): string => bodies.join('\u001e');

/** The bodies of `joinBodies` (the SQL expression `param`) as rows, in order. */
export const splitBodies = (param: string): string => `unnest(string_to_array(${param}, chr(30)))`;

/** The rows as two parameters: the short fields as JSON (cheaper to build than pg's escaped arrays), the bodies apart. */
export function rowParams(rows: NewDelivery[]): [json: string, bodies: string] {
  const fields = rows.map((d) => ({
    id: d.id,
    webhookId: d.webhookId,
    orgId: d.orgId,
    mode: d.mode,
    sourceKey: d.sourceKey,
    eventType: d.eventType,
  }));
  return [JSON.stringify(fields), joinBodies(rows.map((d) => d.body))];
}

/** The rows of `rowParams`, from parameters $1 (fields) and `bodies`, zipped in order. */
const rowsFrom = (bodies: string) => `ROWS FROM (
    json_to_recordset($1::json)
      AS (id text, "webhookId" text, "orgId" text, mode text, "sourceKey" text, "eventType" text),
    ${splitBodies(bodies)}
  ) AS r(id, "webhookId", "orgId", mode, "sourceKey", "eventType", body)`;

/** The rows of `rowParams` ($1 and `bodies`; $2 is now) as new deliveries, due at once. */
const newRows = (bodies: string) => `
INSERT INTO webhook_deliveries (id, webhook_id, org_id, mode, source_key, event_type, body, status, attempts,
  next_attempt_at, created_at, updated_at)
SELECT r.id, r."webhookId", r."orgId", r.mode, r."sourceKey", r."eventType", r.body, 'pending', 0, $2, $2, $2
FROM ${rowsFrom(bodies)}`;

/**
 * A first attempt that succeeds (nearly every delivery) is kept in the delivery row itself rather than in a
 * webhook_attempts row of its own: its time and status are the row's completed_at and last_response_status, its
 * latency and excerpt have columns of their own (first_latency_ms, first_response_excerpt). A row is read back
 * that way by the delivery log (read-side/webhooks/queries.ts). Before a finished delivery is reset for another
 * round (retry request, replay), in the same transaction, that attempt moves to webhook_attempts: the rows are
 * locked first, so that a success landing meanwhile is moved too rather than cleared by the reset.
 */
export async function moveFirstAttempts(tx: Queryable, webhookId: string, ids: string[]): Promise<void> {
  await tx.query(
    `WITH old AS (
       SELECT id, status, completed_at, last_response_status, first_latency_ms, first_response_excerpt
       FROM webhook_deliveries WHERE webhook_id = $1 AND id = ANY($2) FOR UPDATE
     )
     INSERT INTO webhook_attempts (delivery_id, attempt, attempted_at, response_status, latency_ms, response_excerpt)
     SELECT id, 1, completed_at, last_response_status, first_latency_ms, first_response_excerpt FROM old
     WHERE first_latency_ms IS NOT NULL AND status <> 'pending'`,
    [webhookId, ids],
  );
}

/**
 * A delivery's columns set back to pending, with a fresh round of attempts due at `due` (a retry request, a
 * replay); its first attempt, if kept in the row, must be moved to webhook_attempts first (moveFirstAttempts).
 */
export const resetColumns = (due: string) => `status = 'pending', attempts = 0, next_attempt_at = ${due},
  claim_token = NULL, completed_at = NULL, updated_at = ${due}, first_latency_ms = NULL, first_response_excerpt = NULL`;

/** The INSERT of deliveries from `rowParams` (see newRows), of the rows that pass `where`, returning the ids written. */
export const insertDeliveries = (bodies: string, where = 'true') => `${newRows(bodies)}
WHERE ${where}
ON CONFLICT (webhook_id, id) DO NOTHING
RETURNING id`;

/** A replay's upsert: a finished delivery goes back to pending with a fresh round of attempts. */
const RESET_SQL = `${newRows('$3')}
ON CONFLICT (webhook_id, id) DO UPDATE SET ${resetColumns('EXCLUDED.next_attempt_at')}
WHERE webhook_deliveries.status <> 'pending'
RETURNING id`;

/** Records deliveries, due at once, and returns the ids of those written. */
export async function saveDeliveries(q: Queryable, rows: NewDelivery[], now: Date): Promise<string[]> {
  if (rows.length === 0) return [];
  const [json, bodies] = rowParams(rows);
  const { rows: written } = await q.query<{ id: string }>(insertDeliveries('$3'), [json, now, bodies]);
  return written.map((r) => r.id);
}

/** A delivery handed over unwritten (see hand-over.ts), as its row is recorded for a later attempt. */
export const unwrittenRow = (d: Claimed): NewDelivery => ({
  id: d.id,
  webhookId: d.webhook_id,
  orgId: d.org_id,
  mode: d.mode,
  sourceKey: d.unwritten!.sourceKey,
  eventType: d.event_type,
  body: d.body,
});

/**
 * Puts deliveries back to pending for a fresh round of attempts under their ids (replay), recording those that
 * never existed; returns the ids written. In a transaction: the first attempts move out first.
 */
export async function resetDeliveries(tx: Transaction, rows: NewDelivery[], now: Date): Promise<string[]> {
  if (rows.length === 0) return [];
  for (const webhookId of new Set(rows.map((d) => d.webhookId))) {
    const ids = rows.filter((d) => d.webhookId === webhookId).map((d) => d.id);
    await moveFirstAttempts(tx, webhookId, ids);
  }
  const [json, bodies] = rowParams(rows);
  const { rows: written } = await tx.query<{ id: string }>(RESET_SQL, [json, now, bodies]);
  return written.map((r) => r.id);
}
