import type { Database } from '../../platform/db/database.ts';
import { joinBodies, splitBodies } from './deliveries.ts';
import type { Claimed } from './dispatcher.process.ts';

/**
 * Records successful attempts in batches, in one statement: the deliveries written for the first time (handed
 * over by the fan-out unwritten: their row is inserted now, as succeeded, body and all), the claimed ones (their
 * row updated, if still claimed by the same token), the attempts that are not first ones (or whose delivery was
 * reset or replayed while in flight) and the endpoints' health. The bodies come apart from the JSON, joined by
 * U+001E (see deliveries.ts, joinBodies), empty for claimed deliveries; times as epoch milliseconds (cheaper to
 * write than dates' text). It is the body of a PL/pgSQL function
 * (migration webhook-process-004; a change here needs a migration that replaces it): the function's plan is
 * prepared once per connection, where the statement sent as such was planned at every flush, about 1.2 ms of
 * PostgreSQL's CPU, as much as writing 40 successes.
 */
export const RECORD_SUCCESSES_FUNCTION = `
CREATE OR REPLACE FUNCTION webhook_record_successes(successes json, bodies text) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
WITH r AS (
  SELECT id, webhook, token, attempt, to_timestamp(at / 1000) AS at, status, latency, excerpt, org, mode, source, type,
    to_timestamp(created / 1000) AS created, body
  FROM ROWS FROM (
    json_to_recordset(successes) AS (id text, webhook text, token text, attempt int, at float8, status int,
      latency int, excerpt text, org text, mode text, source text, type text, created float8),
    ${splitBodies('bodies')}
  ) AS j(id, webhook, token, attempt, at, status, latency, excerpt, org, mode, source, type, created, body)
), d AS (
  UPDATE webhook_deliveries w SET status = 'succeeded', attempts = r.attempt, claim_token = NULL,
    last_response_status = r.status, last_error = NULL, updated_at = r.at, completed_at = r.at,
    first_latency_ms = CASE WHEN r.attempt = 1 THEN r.latency END,
    first_response_excerpt = CASE WHEN r.attempt = 1 THEN r.excerpt END
  FROM r WHERE r.token IS NOT NULL AND w.webhook_id = r.webhook AND w.id = r.id AND w.claim_token = r.token
  RETURNING w.webhook_id, w.id, r.at
), i AS (
  INSERT INTO webhook_deliveries (id, webhook_id, org_id, mode, source_key, event_type, body, status, attempts,
    next_attempt_at, last_response_status, created_at, updated_at, completed_at, first_latency_ms, first_response_excerpt)
  SELECT r.id, r.webhook, r.org, r.mode, r.source, r.type, r.body, 'succeeded', 1, r.at, r.status, r.created, r.at,
    r.at, r.latency, r.excerpt
  FROM r WHERE r.token IS NULL
  ON CONFLICT (webhook_id, id) DO NOTHING
  RETURNING webhook_id, id, completed_at AS at
), done AS (
  SELECT * FROM d UNION ALL SELECT * FROM i
), a AS (
  INSERT INTO webhook_attempts (delivery_id, attempt, attempted_at, response_status, latency_ms, response_excerpt)
  SELECT id, attempt, at, status, latency, excerpt FROM r
  WHERE attempt > 1 OR NOT EXISTS (SELECT FROM done WHERE done.webhook_id = r.webhook AND done.id = r.id)
)
UPDATE webhook_endpoints e SET consecutive_failures = 0, exhausted_streak = 0, last_success_at = s.at
FROM (SELECT webhook_id, max(at) AS at FROM done GROUP BY webhook_id) s
WHERE e.webhook_id = s.webhook_id
  AND (e.consecutive_failures > 0 OR e.exhausted_streak > 0 OR e.last_success_at IS NULL OR e.last_success_at < s.at); END $fn$`;

/** Successes waiting for the next flush. */
interface Success {
  row: Claimed;
  at: Date;
  status: number;
  latency: number;
  excerpt: string | null;
}

/** A failed flush of deliveries without a row is tried again after this long: they exist nowhere else. */
const RETRY_MS = 1000;

/**
 * Successful attempts, written in batches: one flush at a time, the successes arriving meanwhile waiting for the
 * next, so batches grow with the load. Deliveries written for the first time are reported written
 * (`Claimed.unwritten.recorded`) once their batch is committed; a batch that fails to be written is logged and,
 * for those, tried again. Claimed deliveries of a failed batch stay claimed and are sent again once their lease
 * ends.
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

  add(row: Claimed, at: Date, status: number, latency: number, excerpt: string | null): void {
    this.#pending.push({ row, at, status, latency, excerpt });
    if (!this.#flushing) this.#timer ??= setTimeout(this.#flush, 2);
  }

  /** Resolves once every success added so far is written (or failed to be). */
  idle(): Promise<void> {
    if (!this.#flushing && this.#pending.length === 0 && !this.#timer) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #flush = (): void => {
    this.#timer = undefined;
    const batch = this.#pending.splice(0, 1000);
    const bodies: string[] = [];
    const rows = batch.map(({ row, at, status, latency, excerpt }) => {
      const fresh = row.unwritten;
      bodies.push(fresh ? row.body : '');
      const success = {
        id: row.id,
        webhook: row.webhook_id,
        token: row.claim_token,
        attempt: row.attempts + 1,
        at: at.getTime(),
        status,
        latency,
        excerpt,
      };
      if (!fresh) return success;
      const { org_id: org, mode, event_type: type } = row;
      return { ...success, org, mode, source: fresh.sourceKey, type, created: fresh.createdAt.getTime() };
    });
    this.#flushing = this.#db
      .query('SELECT webhook_record_successes($1::json, $2)', [JSON.stringify(rows), joinBodies(bodies)])
      .then(
        () => {
          for (const { row } of batch) row.unwritten?.recorded();
        },
        (error) => {
          this.#onError(error, batch.length);
          const unwritten = batch.filter((s) => s.row.unwritten);
          if (unwritten.length === 0) return;
          this.#pending.unshift(...unwritten);
          return new Promise<void>((r) => setTimeout(r, RETRY_MS));
        },
      )
      .finally(() => {
        this.#flushing = undefined;
        if (this.#pending.length > 0) this.#flush();
        else for (const resolve of this.#idle.splice(0)) resolve();
      });
  };
}
