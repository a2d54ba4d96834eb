import type { Database, Queryable } from '../../platform/db/database.ts';
import type { Claimed } from './dispatcher.process.ts';

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
 * Records successful attempts in batches: the deliveries, the attempts that are not first ones (or whose delivery
 * was reset while in flight: its claim token no longer matches) and the endpoints' health, in one statement. It is
 * the body of a PL/pgSQL function (migration webhook-process-003; a change here needs a migration that replaces
 * it): the function's plan is prepared once per connection, where the statement sent as such was planned at every
 * flush, about 1.2 ms of PostgreSQL's CPU, as much as writing 40 successes.
 */
export const RECORD_SUCCESSES_FUNCTION = `
CREATE OR REPLACE FUNCTION webhook_record_successes(successes json) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
WITH r AS (
  SELECT * FROM json_to_recordset(successes)
    AS r(id text, webhook text, token text, attempt int, at timestamptz, status int, latency int, excerpt text)
), d AS (
  UPDATE webhook_deliveries w SET status = 'succeeded', attempts = r.attempt, claim_token = NULL,
    last_response_status = r.status, last_error = NULL, updated_at = r.at, completed_at = r.at,
    first_latency_ms = CASE WHEN r.attempt = 1 THEN r.latency END,
    first_response_excerpt = CASE WHEN r.attempt = 1 THEN r.excerpt END
  FROM r WHERE w.webhook_id = r.webhook AND w.id = r.id AND w.claim_token = r.token
  RETURNING w.webhook_id, w.id, r.at
), a AS (
  INSERT INTO webhook_attempts (delivery_id, attempt, attempted_at, response_status, latency_ms, response_excerpt)
  SELECT id, attempt, at, status, latency, excerpt FROM r
  WHERE attempt > 1 OR NOT EXISTS (SELECT FROM d WHERE d.webhook_id = r.webhook AND d.id = r.id)
)
UPDATE webhook_endpoints e SET consecutive_failures = 0, exhausted_streak = 0, last_success_at = s.at
FROM (SELECT webhook_id, max(at) AS at FROM d GROUP BY webhook_id) s
WHERE e.webhook_id = s.webhook_id
  AND (e.consecutive_failures > 0 OR e.exhausted_streak > 0 OR e.last_success_at IS NULL OR e.last_success_at < s.at); END $fn$`;

/** Successes waiting for the next flush, as the JSON objects of the function's rows. */
interface Success {
  id: string;
  webhook: string;
  token: string;
  attempt: number;
  at: Date;
  status: number;
  latency: number;
  excerpt: string | null;
}

/**
 * Successful attempts, written in batches: one flush at a time, the successes arriving meanwhile waiting for the
 * next, so batches grow with the load. A batch that fails to be written is logged; its deliveries stay claimed
 * and are sent again once their lease ends.
 */
export class SuccessLog {
  readonly #db: Database;
  readonly #onError: (error: unknown, count: number) => void;
  #pending: Success[] = [];
  #timer?: ReturnType<typeof setTimeout>;
  #flushing?: Promise<void>;
  #idle: (() => void)[] = [];

  constructor(db: Database, onError: (error: unknown, count: number) => void) {
    this.#db = db;
    this.#onError = onError;
  }

  add(row: Claimed, at: Date, status: number, latencyMs: number, excerpt: string | null): void {
    this.#pending.push({
      id: row.id,
      webhook: row.webhook_id,
      token: row.claim_token,
      attempt: row.attempts + 1,
      at,
      status,
      latency: latencyMs,
      excerpt,
    });
    if (!this.#flushing) this.#timer ??= setTimeout(this.#flush, 2);
  }

  /** Resolves once every success added so far is written (or failed to be). */
  idle(): Promise<void> {
    if (!this.#flushing && this.#pending.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #flush = (): void => {
    this.#timer = undefined;
    const batch = this.#pending.splice(0, 1000);
    this.#flushing = this.#db
      .query('SELECT webhook_record_successes($1::json)', [JSON.stringify(batch)])
      .then(
        () => {},
        (error) => this.#onError(error, batch.length),
      )
      .finally(() => {
        this.#flushing = undefined;
        if (this.#pending.length > 0) this.#flush();
        else for (const resolve of this.#idle.splice(0)) resolve();
      });
  };
}
