import { randomUUID } from 'node:crypto';
import type { Queryable } from '../../platform/db/database.ts';

/** A delivery claimed for an attempt, with what sending it needs. */
export interface Claimed {
  id: string;
  webhook_id: string;
  org_id: string;
  mode: 'live' | 'test';
  event_type: string;
  body: string;
  attempts: number;
  url: string;
  sealed_secret: string;
  previous_sealed_secret: string | null;
  previous_valid_until: Date | null;
  /** The claim's token: outcomes are recorded only while the row still carries it. */
  claim_token: string;
  /** Clock time of the claim (not a column). */
  claimedAt: number;
}

/**
 * Due deliveries of active endpoints, oldest first, locked FOR UPDATE SKIP LOCKED (claims in other processes pass
 * each other by) and leased in the same statement, so no transaction stays open during HTTP and a crashed
 * dispatcher's claims come back once the lease ends. At most $3 per endpoint, less what this dispatcher already
 * holds of it ($4 endpoints, $5 counts), so one endpoint's backlog cannot take every slot; no more rows are
 * locked than could be chosen. Sent as a statement, so it is planned for its parameters at each call: a cached
 * generic plan (a PL/pgSQL function's) can scan the whole table, half a second a claim on a table of 20,000 rows.
 */
const CLAIM_SQL = `
WITH chosen AS (
  SELECT c.id, c.webhook_id FROM webhook_endpoints e
  LEFT JOIN unnest($4::text[], $5::int[]) AS b(webhook_id, n) ON b.webhook_id = e.webhook_id
  CROSS JOIN LATERAL (
    SELECT d.id, d.webhook_id, d.next_attempt_at FROM webhook_deliveries d
    WHERE d.webhook_id = e.webhook_id AND d.status = 'pending' AND d.next_attempt_at <= $1
      AND (d.claim_token IS NULL OR d.leased_until <= $1)
    ORDER BY d.next_attempt_at LIMIT greatest(0, least($3 - coalesce(b.n, 0), $2))
    FOR UPDATE OF d SKIP LOCKED
  ) c
  WHERE e.active AND NOT e.deleted
  ORDER BY c.next_attempt_at, c.id LIMIT $2
)
UPDATE webhook_deliveries d SET leased_until = $6, claim_token = $7
FROM chosen, webhook_endpoints e
WHERE d.webhook_id = chosen.webhook_id AND d.id = chosen.id AND e.webhook_id = d.webhook_id
RETURNING d.id, d.webhook_id, d.org_id, d.mode, d.event_type, d.body, d.attempts, d.claim_token,
  e.url, e.sealed_secret, e.previous_sealed_secret, e.previous_valid_until`;

export async function claimDue(
  q: Queryable,
  o: { now: Date; limit: number; perEndpoint: number; held: Map<string, number>; leasedUntil: Date },
): Promise<Claimed[]> {
  const { rows } = await q.query<Claimed>(CLAIM_SQL, [
    o.now,
    o.limit,
    o.perEndpoint,
    [...o.held.keys()],
    [...o.held.values()],
    o.leasedUntil,
    randomUUID(),
  ]);
  for (const row of rows) row.claimedAt = o.now.getTime();
  return rows;
}

/** Gives claims back unsent (a dispatcher stopping): any dispatcher may claim them at once. */
export async function releaseClaims(q: Queryable, rows: Claimed[]): Promise<void> {
  if (rows.length === 0) return;
  await q.query(
    `UPDATE webhook_deliveries SET claim_token = NULL
     WHERE webhook_id = ANY($1) AND id = ANY($2) AND claim_token = ANY($3)`,
    [
      [...new Set(rows.map((r) => r.webhook_id))],
      rows.map((r) => r.id),
      [...new Set(rows.map((r) => r.claim_token))],
    ],
  );
}

/** Deliveries whose next attempt is due by `now` (claimed or not): the dispatcher's backlog, for /metrics. */
export async function dueAttempts(q: Queryable, now: Date): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= $1`,
    [now],
  );
  return rows[0].n;
}
