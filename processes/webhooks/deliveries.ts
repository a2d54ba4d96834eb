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
    ...endpoint,
    sourceKey: `${source.streamId}@${source.revision}`,
    eventType: type,
    body: envelope(type, id, source.createdAt, data),
  };
}

/**
 * Records deliveries, due at once. `insert` (fan-out) keeps an existing (webhook, event) delivery as it is;
 * `reset` (replay) puts a finished one back to pending with a fresh round of attempts, under its original id.
 */
export async function saveDeliveries(
  q: Queryable,
  rows: NewDelivery[],
  now: Date,
  mode: 'insert' | 'reset',
): Promise<number> {
  if (rows.length === 0) return 0;
  const onConflict =
    mode === 'insert'
      ? 'DO NOTHING'
      : `DO UPDATE SET status = 'pending', attempts = 0, next_attempt_at = EXCLUDED.next_attempt_at, claim_token = NULL,
           completed_at = NULL, updated_at = EXCLUDED.updated_at WHERE webhook_deliveries.status <> 'pending'`;
  // One JSON parameter rather than seven arrays: JSON.stringify is far cheaper than pg's array escaping of bodies.
  const { rowCount } = await q.query(
    `INSERT INTO webhook_deliveries (id, webhook_id, org_id, mode, source_key, event_type, body, status, attempts, next_attempt_at, created_at, updated_at)
     SELECT r.id, r."webhookId", r."orgId", r.mode, r."sourceKey", r."eventType", r.body, 'pending', 0, $2, $2, $2
     FROM json_to_recordset($1::json)
       AS r(id text, "webhookId" text, "orgId" text, mode text, "sourceKey" text, "eventType" text, body text)
     ON CONFLICT (webhook_id, source_key) ${onConflict}`,
    [JSON.stringify(rows), now],
  );
  return rowCount;
}
