import { EventEmitter } from 'node:events';
import type { Queryable } from '../../platform/db/database.ts';
import { newId } from '../../platform/ids.ts';
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
  /** `<stream>@<revision>` of the source event: with the webhook id, what makes a replayed fan-out harmless. */
  sourceKey: string;
  eventType: string;
  body: string;
  /** Claimed at insert for a dispatcher of this process (see hand-over.ts), or null. */
  claimToken: string | null;
}

/** A delivery of one event to one endpoint, its body frozen now so every attempt sends the same bytes. */
export function newDelivery(
  endpoint: { webhookId: string; orgId: string; mode: string },
  source: { streamId: string; revision: number; createdAt: Date },
  type: string,
  data: Record<string, unknown>,
  now: Date,
): NewDelivery {
  const id = newId('whl', now.getTime());
  return {
    id,
    webhookId: endpoint.webhookId,
    orgId: endpoint.orgId,
    mode: endpoint.mode,
    sourceKey: `${source.streamId}@${source.revision}`,
    eventType: type,
    body: envelope(type, id, source.createdAt, data),
    claimToken: null,
  };
}

/**
 * The INSERT of deliveries from a JSON parameter ($1; $2 is now, $3 the lease's end for rows with a claim token),
 * of the rows that pass `where`, returning the ids written. One JSON parameter rather than eight arrays:
 * JSON.stringify is far cheaper than pg's array escaping of bodies.
 */
export const insertDeliveries = (onConflict: string, where = 'true') => `
INSERT INTO webhook_deliveries (id, webhook_id, org_id, mode, source_key, event_type, body, status, attempts,
  next_attempt_at, claim_token, leased_until, created_at, updated_at)
SELECT r.id, r."webhookId", r."orgId", r.mode, r."sourceKey", r."eventType", r.body, 'pending', 0, $2,
  r."claimToken", CASE WHEN r."claimToken" IS NOT NULL THEN $3::timestamptz END, $2, $2
FROM json_to_recordset($1::json)
  AS r(id text, "webhookId" text, "orgId" text, mode text, "sourceKey" text, "eventType" text, body text,
    "claimToken" text)
WHERE ${where}
ON CONFLICT (webhook_id, source_key) ${onConflict}
RETURNING id`;

/**
 * Records deliveries, due at once, and returns the ids of those written. `insert` (fan-out) keeps an existing
 * (webhook, event) delivery as it is; `reset` (replay) puts a finished one back to pending with a fresh round of
 * attempts, under its original id. Rows with a claim token are inserted claimed until `leasedUntil`.
 */
export async function saveDeliveries(
  q: Queryable,
  rows: NewDelivery[],
  now: Date,
  mode: 'insert' | 'reset',
  leasedUntil: Date | null = null,
): Promise<string[]> {
  if (rows.length === 0) return [];
  const onConflict =
    mode === 'insert'
      ? 'DO NOTHING'
      : `DO UPDATE SET status = 'pending', attempts = 0, next_attempt_at = EXCLUDED.next_attempt_at, claim_token = NULL,
           completed_at = NULL, updated_at = EXCLUDED.updated_at WHERE webhook_deliveries.status <> 'pending'`;
  const { rows: written } = await q.query<{ id: string }>(insertDeliveries(onConflict), [
    JSON.stringify(rows),
    now,
    leasedUntil,
  ]);
  return written.map((r) => r.id);
}
