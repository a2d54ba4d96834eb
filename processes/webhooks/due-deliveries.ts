import type { Queryable } from '../../platform/db/database.ts';
import type { DueTable } from '../due-queue.ts';

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

/** A claimed delivery with what sending it needs of its endpoint. */
export interface Claimed extends DueDelivery {
  url: string;
  sealed_secret: string;
  previous_sealed_secret: string | null;
  previous_valid_until: Date | null;
}

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

/** Claimed deliveries with their endpoints' address and secrets (as they are now: a rotation is seen at once). */
export async function withEndpoints(q: Queryable, rows: DueDelivery[]): Promise<Claimed[]> {
  if (rows.length === 0) return [];
  const { rows: endpoints } = await q.query<Omit<Claimed, keyof DueDelivery> & { webhook_id: string }>(
    `SELECT webhook_id, url, sealed_secret, previous_sealed_secret, previous_valid_until FROM webhook_endpoints
     WHERE webhook_id = ANY($1)`,
    [[...new Set(rows.map((r) => r.webhook_id))]],
  );
  // An endpoint's row is never deleted (a deleted endpoint is marked so): every claimed delivery has one.
  const byId = new Map(endpoints.map((e) => [e.webhook_id, e]));
  return rows.map((r) => ({ ...r, ...byId.get(r.webhook_id)! }));
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
