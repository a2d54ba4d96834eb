const MIN = 60_000;
const HOUR = 60 * MIN;

/** Waits between attempts: `delaysMs[n - 1]` after the n-th failed, each spread by ±`jitter` (0 to 1). */
export interface RetrySchedule {
  delaysMs: readonly number[];
  jitter: number;
}

/**
 * Email delivery, per recipient, after a 4xx, a time-out, a refused connection or DNS trouble: 12 attempts in all
 * over about 52 hours; when the 12th fails too the recipient bounces (soft) with the last answer. RFC 5321 asks
 * for "at least 4-5 days" at most; transactional mail is worthless long before that.
 */
export const EMAIL_RETRIES: RetrySchedule = {
  delaysMs: [
    1 * MIN,
    5 * MIN,
    15 * MIN,
    30 * MIN,
    1 * HOUR,
    2 * HOUR,
    4 * HOUR,
    8 * HOUR,
    12 * HOUR,
    12 * HOUR,
    12 * HOUR,
  ],
  jitter: 0,
};

/**
 * Webhook deliveries, the Standard Webhooks schedule: attempt 1 at once, then after about 5 s, 5 min, 30 min, 2 h,
 * 5 h, 10 h and 10 h, ±20 % so that an endpoint coming back is not hit by every delivery at once: 8 attempts over
 * about 28 hours, then the delivery is exhausted.
 */
export const WEBHOOK_RETRIES: RetrySchedule = {
  delaysMs: [5_000, 5 * MIN, 30 * MIN, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR],
  jitter: 0.2,
};

/** Attempts in all: the first, and one after each delay. */
export const maxAttempts = (schedule: RetrySchedule) => schedule.delaysMs.length + 1;

/**
 * The wait after attempt `failed` (1-based) failed, or null when that was the last one. `random` in [0, 1) places
 * it within the jitter.
 */
export function retryDelay(
  schedule: RetrySchedule,
  failed: number,
  random: () => number = Math.random,
): number | null {
  const base = schedule.delaysMs[failed - 1];
  if (base === undefined) return null;
  if (schedule.jitter === 0) return base;
  return Math.round(base * (1 - schedule.jitter + 2 * schedule.jitter * random()));
}

/** When to try again after attempt `failed` (1-based) failed at `now`, or null to give up. */
export function nextAttemptAt(
  schedule: RetrySchedule,
  failed: number,
  now: Date,
  random?: () => number,
): Date | null {
  const delay = retryDelay(schedule, failed, random);
  return delay === null ? null : new Date(now.getTime() + delay);
}
