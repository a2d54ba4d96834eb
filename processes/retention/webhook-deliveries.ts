import type { Queryable } from '../../platform/db/database.ts';

/** Deliveries deleted by one statement (a short transaction of its own); a purge goes on until fewer are left. */
export const DELIVERY_PURGE_BATCH = 1000;

/**
 * One batch: the oldest ended deliveries (any status but `pending`, which a delivery being retried keeps) that
 * ended at `$1` or before, and their attempts. The batch is found through webhook_deliveries_ended and deleted by
 * row address (a scan of the batch, not of every ended row). A row a retry or replay is resetting meanwhile is
 * skipped (SKIP LOCKED), and the DELETE checks the row as it is when it takes it: a delivery made pending again
 * stays.
 */
const PURGE_SQL = `
WITH ended AS (
  DELETE FROM webhook_deliveries d
  WHERE d.ctid = ANY (ARRAY(
      SELECT ctid FROM webhook_deliveries
      WHERE status <> 'pending' AND completed_at <= $1
      ORDER BY completed_at
      LIMIT ${DELIVERY_PURGE_BATCH}
      FOR UPDATE SKIP LOCKED))
    AND d.status <> 'pending' AND d.completed_at <= $1
  RETURNING d.id
), attempts AS (
  DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM ended)
)
SELECT count(*)::int AS n FROM ended`;

/**
 * Deletes the webhook deliveries (the delivery log's `webhook_deliveries`, with their `webhook_attempts`) that ended
 * at `endedBy` or before, a batch at a time, until none is left or `signal` aborts. Pending deliveries, first
 * attempts and retries alike, are never deleted. Resolves with how many deliveries were deleted.
 */
export async function purgeEndedDeliveries(
  q: Queryable,
  endedBy: Date,
  signal?: AbortSignal,
): Promise<number> {
  let purged = 0;
  for (;;) {
    const { rows } = await q.query<{ n: number }>(PURGE_SQL, [endedBy]);
    const n = rows[0]?.n ?? 0;
    purged += n;
    if (n < DELIVERY_PURGE_BATCH || signal?.aborted) return purged;
  }
}
