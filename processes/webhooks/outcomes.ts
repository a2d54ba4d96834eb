import type { Database } from '../../platform/db/database.ts';
import { observeWebhook } from '../../platform/metrics.ts';
import type { Services } from '../../platform/services.ts';
import { disableWebhook, recordDeliveryExhausted } from '../../write-side/webhooks/webhook.commands.ts';
import { retryDelay, WEBHOOK_RETRIES } from '../retry-schedule.ts';
import type { Claimed } from './deliveries.ts';
import type { SendOutcome } from './http-sender.ts';
import { parseRetryAfter } from './retry-after.ts';

/**
 * What an attempt's outcome does to its delivery, written only while the delivery still carries the attempt's
 * claim token (one reset or replayed while in flight is left to its new round; the attempt stays in the log):
 * a 2xx marks it succeeded, written in batches; anything else is retried on the spec's schedule, exhausts it, or
 * fails it and disables the endpoint (410 Gone), written one by one.
 */
export class Outcomes {
  readonly #services: Services;
  readonly #random: () => number;
  /** Called once an endpoint has been disabled here, so the deliveries claimed ahead for it are not sent. */
  readonly #disabled: (webhookId: string) => Promise<void>;
  readonly #successes: SuccessLog;
  /** Failures being written. */
  readonly #recording = new Set<Promise<void>>();

  constructor(services: Services, random: () => number, disabled: (webhookId: string) => Promise<void>) {
    this.#services = services;
    this.#random = random;
    this.#disabled = disabled;
    this.#successes = new SuccessLog(services.db, (error, count) =>
      services.log.error({ err: error, count }, 'webhook successes failed to record'),
    );
  }

  /** Records an attempt that started `at` and took `latencyMs`. */
  record(row: Claimed, outcome: SendOutcome, latencyMs: number, at: Date): void {
    observeWebhook(outcome.status, latencyMs);
    if (outcome.status !== null && outcome.status >= 200 && outcome.status < 300) {
      this.#successes.add(row, at, outcome.status, latencyMs, outcome.excerpt);
      return;
    }
    const times = { startedAt: at, endedAt: this.#services.clock.now() };
    const recording: Promise<void> = recordFailure(
      this.#services,
      this.#random,
      this.#disabled,
      row,
      row.attempts + 1,
      outcome,
      latencyMs,
      times,
    )
      .catch((err) =>
        this.#services.log.error({ err, delivery: row.id }, 'webhook delivery failed to record'),
      )
      .finally(() => this.#recording.delete(recording));
    this.#recording.add(recording);
  }

  /** Resolves once every outcome recorded so far is written (or failed to be). */
  async idle(): Promise<void> {
    await Promise.all(this.#recording);
    await this.#successes.idle();
  }
}

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
class SuccessLog {
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

/** An endpoint is switched off once this many deliveries in a row were exhausted with no success in between. */
export const AUTO_DISABLE_AFTER_EXHAUSTED = 3;

/** The delivery's next state, if it is still claimed by this attempt's claim (not reset while in flight). */
const UPDATE_SQL = `
UPDATE webhook_deliveries SET status = $5, attempts = $6, next_attempt_at = $7, claim_token = NULL, claimed_until = NULL,
  last_response_status = $8, last_error = $9, updated_at = $4, completed_at = $10
WHERE webhook_id = $1 AND id = $2 AND claim_token = $3`;

/** When a failed attempt started (its log's time) and when it ended (the answer, the error or the time-out). */
export interface AttemptTimes {
  startedAt: Date;
  endedAt: Date;
}

/**
 * Records a failed attempt: the next attempt on the retry schedule (Retry-After honoured for 429 and 503), or
 * `exhausted` after the last, or `failed` at once for 410 Gone, which also disables the endpoint. Consecutive
 * exhausted deliveries disable it too. The schedule's wait counts from the attempt's end: an endpoint that timed
 * out gets its full pause before the next attempt, not what is left of it after the time-out.
 */
async function recordFailure(
  services: Services,
  random: () => number,
  disabled: (webhookId: string) => Promise<void>,
  row: Claimed,
  attempt: number,
  outcome: SendOutcome,
  latencyMs: number,
  { startedAt, endedAt: now }: AttemptTimes,
): Promise<void> {
  const db = services.db;
  const gone = outcome.status === 410;
  let delay = gone ? null : retryDelay(WEBHOOK_RETRIES, attempt, random);
  if (delay !== null && (outcome.status === 429 || outcome.status === 503)) {
    delay = Math.max(delay, parseRetryAfter(outcome.retryAfter, now) ?? 0);
  }
  const status = gone ? 'failed' : delay === null ? 'exhausted' : 'pending';
  const error = gone
    ? 'the endpoint answered 410 Gone; it has been disabled'
    : (outcome.error ?? `the endpoint answered ${outcome.status}`);
  const next = delay === null ? now : new Date(now.getTime() + delay);
  const { rowCount } = await db.query(UPDATE_SQL, [
    row.webhook_id,
    row.id,
    row.claim_token,
    now,
    status,
    attempt,
    next,
    outcome.status,
    error,
    status === 'pending' ? null : now,
  ]);
  await db.query(
    `INSERT INTO webhook_attempts (delivery_id, attempt, attempted_at, response_status, latency_ms, response_excerpt, error)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [row.id, attempt, startedAt, outcome.status, latencyMs, outcome.excerpt, outcome.error],
  );
  // The delivery was reset (retry requested) or replayed while in flight: its new round decides, and counts, not this
  // outcome (as for successes, the attempt stays in the log).
  if (rowCount === 0) return;
  const { rows } = await db.query<{ exhausted_streak: number }>(
    `UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1, total_failures = total_failures + 1,
         last_failure_at = $2, exhausted_streak = exhausted_streak + $3
       WHERE webhook_id = $1 RETURNING exhausted_streak`,
    [row.webhook_id, now, status === 'exhausted' ? 1 : 0],
  );
  const meta = { orgId: row.org_id, mode: row.mode, actor: 'system' };
  if (gone) await disable(services, disabled, row, meta, 'endpoint_gone', `${row.url} answered 410 Gone`);
  if (status === 'exhausted') {
    await recordDeliveryExhausted(services, meta, {
      webhookId: row.webhook_id,
      deliveryId: row.id,
      eventType: row.event_type,
      attempts: attempt,
    });
    if ((rows[0]?.exhausted_streak ?? 0) >= AUTO_DISABLE_AFTER_EXHAUSTED) {
      await disable(
        services,
        disabled,
        row,
        meta,
        'consecutive_failures',
        `${AUTO_DISABLE_AFTER_EXHAUSTED} deliveries in a row were exhausted`,
      );
    }
  }
}

/**
 * Stops dispatch to the endpoint at once (process state; `disabled` then cancels the deliveries this process claimed
 * ahead for it), and records why on its stream.
 */
async function disable(
  services: Services,
  disabled: (webhookId: string) => Promise<void>,
  row: Claimed,
  meta: { orgId: string; mode: 'live' | 'test'; actor: string },
  reason: 'endpoint_gone' | 'consecutive_failures',
  detail: string,
) {
  await services.db.query('UPDATE webhook_endpoints SET active = false WHERE webhook_id = $1', [
    row.webhook_id,
  ]);
  // Either goes ahead when the other fails: the claims, when the event cannot be written, and the other way round.
  await Promise.all([
    disabled(row.webhook_id),
    disableWebhook(services, meta, row.webhook_id, reason, detail),
  ]);
}
