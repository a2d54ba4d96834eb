import type { Database } from '../../platform/db/database.ts';
import type { Claimed } from './dispatcher.process.ts';

/**
 * Records successful attempts in batches: the delivery, its attempt and the endpoint's health in one statement
 * for many deliveries, which keeps the database out of the way.
 */
const SUCCESS_SQL = `
WITH r AS (
  SELECT * FROM json_to_recordset($1::json)
    AS r(id text, webhook text, token text, attempt int, at timestamptz, status int, latency int, excerpt text)
), d AS (
  UPDATE webhook_deliveries w SET status = 'succeeded', attempts = r.attempt, claim_token = NULL,
    last_response_status = r.status, last_error = NULL, updated_at = r.at, completed_at = r.at
  FROM r WHERE w.webhook_id = r.webhook AND w.id = r.id AND w.claim_token = r.token RETURNING w.webhook_id, r.at
), a AS (
  INSERT INTO webhook_attempts (delivery_id, attempt, attempted_at, response_status, latency_ms, response_excerpt)
  SELECT id, attempt, at, status, latency, excerpt FROM r
)
UPDATE webhook_endpoints e SET consecutive_failures = 0, exhausted_streak = 0, last_success_at = s.at
FROM (SELECT webhook_id, max(at) AS at FROM d GROUP BY webhook_id) s
WHERE e.webhook_id = s.webhook_id
  AND (e.consecutive_failures > 0 OR e.exhausted_streak > 0 OR e.last_success_at IS NULL OR e.last_success_at < s.at)`;

interface Success {
  row: Claimed;
  at: Date;
  status: number;
  latencyMs: number;
  excerpt: string | null;
  done: () => void;
  failed: (error: unknown) => void;
}

export class SuccessLog {
  readonly #db: Database;
  readonly #pending: Success[] = [];
  #timer?: ReturnType<typeof setTimeout>;
  #flushing = false;

  constructor(db: Database) {
    this.#db = db;
  }

  /** Resolves once the success is committed. */
  record(row: Claimed, at: Date, status: number, latencyMs: number, excerpt: string | null): Promise<void> {
    return new Promise<void>((done, failed) => {
      this.#pending.push({ row, at, status, latencyMs, excerpt, done, failed });
      this.#timer ??= setTimeout(() => {
        this.#timer = undefined;
        void this.#flush();
      }, 2);
    });
  }

  /** One flush at a time: successes arriving meanwhile wait for the next one, so batches grow with the load. */
  async #flush(): Promise<void> {
    if (this.#flushing) return;
    this.#flushing = true;
    const batch = this.#pending.splice(0, 1000);
    try {
      // One JSON parameter rather than eight arrays: cheaper to build than pg's escaped array literals.
      await this.#db.query(SUCCESS_SQL, [
        JSON.stringify(
          batch.map((s) => ({
            id: s.row.id,
            webhook: s.row.webhook_id,
            token: s.row.claim_token,
            attempt: s.row.attempts + 1,
            at: s.at,
            status: s.status,
            latency: s.latencyMs,
            excerpt: s.excerpt,
          })),
        ),
      ]);
      for (const s of batch) s.done();
    } catch (error) {
      for (const s of batch) s.failed(error);
    } finally {
      this.#flushing = false;
      if (this.#pending.length > 0) void this.#flush();
    }
  }
}
