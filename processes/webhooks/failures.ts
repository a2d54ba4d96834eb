import type { Services } from '../../platform/services.ts';
import { disableWebhook, recordDeliveryExhausted } from '../../write-side/webhooks/webhook.commands.ts';
import { retryDelay, WEBHOOK_RETRIES } from '../retry-schedule.ts';
import type { Claimed } from './due-deliveries.ts';
import type { SendOutcome } from './http-sender.ts';
import { parseRetryAfter } from './retry-after.ts';

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
export async function recordFailure(
  services: Services,
  random: () => number,
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
  if (gone) await disable(services, row, meta, 'endpoint_gone', `${row.url} answered 410 Gone`);
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
        row,
        meta,
        'consecutive_failures',
        `${AUTO_DISABLE_AFTER_EXHAUSTED} deliveries in a row were exhausted`,
      );
    }
  }
}

/** Stops dispatch to the endpoint at once (process state), and records why on its stream. */
async function disable(
  services: Services,
  row: Claimed,
  meta: { orgId: string; mode: 'live' | 'test'; actor: string },
  reason: 'endpoint_gone' | 'consecutive_failures',
  detail: string,
) {
  await services.db.query('UPDATE webhook_endpoints SET active = false WHERE webhook_id = $1', [
    row.webhook_id,
  ]);
  await disableWebhook(services, meta, row.webhook_id, reason, detail);
}
