import { literal, type Queryable, type Transaction } from '../../platform/db/database.ts';
import { deliveryId } from './delivery-ids.ts';
import { envelope } from './public-events.v1.ts';

/** Wakes dispatchers (in any process) when deliveries are recorded, due now. */
export const DELIVERIES_CHANNEL = 'postline_webhook_deliveries';

/** Wakes dispatchers once `tx` commits: the NOTIFY goes with the COMMIT, in its round trip. */
export const wakeDispatchersAtCommit = (tx: Transaction): void =>
  tx.atCommit(`SELECT pg_notify(${literal(DELIVERIES_CHANNEL)}, '')`);

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
 * than pg's escaped arrays), the bodies apart ($3) joined by U+001E: bodies are JSON text, in which that control
 * character is always escaped, and PostgreSQL splits them far faster than it parses them as JSON. A delivery that
 * exists already (its event fanned out or replayed before) is left as it is.
 */
const INSERT_SQL = `
INSERT INTO webhook_deliveries (id, webhook_id, org_id, mode, source_key, event_type, body, status, attempts,
  next_attempt_at, created_at, updated_at)
SELECT r.id, r.webhook_id, r.org_id, r.mode, r.source_key, r.event_type, r.body, 'pending', 0, $2, $2, $2
FROM ROWS FROM (
  json_to_recordset($1::json) AS (id text, webhook_id text, org_id text, mode text, source_key text, event_type text),
  unnest(string_to_array($3, chr(30)))
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
  const bodies = rows.map((d) => d.body).join('\u001e');
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
