const MIN = 60_000;
const HOUR = 60 * MIN;

/**
 * Wait after the n-th failed attempt (4xx, time-out, refused connection, DNS trouble) before the next one.
 * 12 attempts in all over about 52 hours; when the 12th fails too the recipient bounces (soft) with the last
 * answer. RFC 5321 asks for "at least 4-5 days" at most; transactional mail is worthless long before that.
 */
export const RETRY_DELAYS_MS = [
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
];
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

/** After attempt `attempt` (1-based) failed temporarily: when to try again, or null to give up. */
export function nextAttemptAt(attempt: number, now: Date): Date | null {
  if (attempt >= MAX_ATTEMPTS) return null;
  return new Date(now.getTime() + RETRY_DELAYS_MS[attempt - 1]);
}
