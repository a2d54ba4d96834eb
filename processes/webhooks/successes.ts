import type { Database } from '../../platform/db/database.ts';
import type { Claimed } from './due-deliveries.ts';

/**
 * Successful attempts of a batch in one statement: each attempt in webhook_attempts; the deliveries still claimed
 * by the same token marked succeeded (one reset or replayed while its attempt was in flight is left to its new
 * round); and the endpoints' health. Times as epoch milliseconds (cheaper to send than dates' text).
 */
const RECORD_SQL = `
WITH r AS (
  SELECT id, webhook, token, attempt, to_timestamp(at / 1000) AS at, status, latency, excerpt
  FROM json_to_recordset($1::json) AS (id text, webhook text, token text, attempt int, at float8, status int,
    latency int, excerpt text)
), done AS (
  UPDATE webhook_deliveries w SET status = 'succeeded', attempts = r.attempt, claim_token = NULL, claimed_until = NULL,
    last_response_status = r.status, last_error = NULL, updated_at = r.at, completed_at = r.at
  FROM r WHERE w.webhook_id = r.webhook AND w.id = r.id AND w.claim_token = r.token
  RETURNING w.webhook_id, w.id, r.at
), a AS (
  INSERT INTO webhook_attempts (delivery_id, attempt, attempted_at, response_status, latency_ms, response_excerpt)
  SELECT id, attempt, at, status, latency, excerpt FROM r
)
UPDATE webhook_endpoints e SET consecutive_failures = 0, exhausted_streak = 0, last_success_at = s.at
FROM (SELECT webhook_id, max(at) AS at FROM done GROUP BY webhook_id) s
WHERE e.webhook_id = s.webhook_id
  AND (e.consecutive_failures > 0 OR e.exhausted_streak > 0 OR e.last_success_at IS NULL OR e.last_success_at < s.at)`;

/**
 * A batch is written this long after its first success: the statement is planned at each flush (about 1 ms of
 * PostgreSQL's CPU), so fewer, larger batches cost less; the outcome is in the table a few ms later.
 */
const FLUSH_DELAY_MS = 10;

/** Successes waiting for the next flush. */
interface Success {
  row: Claimed;
  at: Date;
  status: number;
  latency: number;
  excerpt: string | null;
}

/**
 * Successful attempts, written in batches (RECORD_SQL): one flush at a time, the successes arriving meanwhile
 * waiting for the next, so batches grow with the load. A batch that fails to be written is logged; its deliveries stay claimed
 * and are sent again once their lease ends (at least once).
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
    if (!this.#flushing) this.#timer ??= setTimeout(this.#flush, FLUSH_DELAY_MS);
  }

  /** Resolves once every success added so far is written (or failed to be). */
  idle(): Promise<void> {
    if (!this.#flushing && this.#pending.length === 0 && !this.#timer) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #flush = (): void => {
    this.#timer = undefined;
    const batch = this.#pending.splice(0, 1000);
    const rows = batch.map(({ row, at, status, latency, excerpt }) => ({
      id: row.id,
      webhook: row.webhook_id,
      token: row.claim_token,
      attempt: row.attempts + 1,
      at: at.getTime(),
      status,
      latency,
      excerpt,
    }));
    this.#flushing = this.#db
      .query(RECORD_SQL, [JSON.stringify(rows)])
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
