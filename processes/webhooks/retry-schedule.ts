/**
 * The spec's schedule: attempt 1 at once, then after about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h, each delay
 * ±20 %: 8 attempts over about 28 hours, then the delivery is exhausted.
 */
export const RETRY_DELAYS_MS = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3600_000,
  5 * 3600_000,
  10 * 3600_000,
  10 * 3600_000,
];
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;
export const JITTER = 0.2;
/** A Retry-After longer than this is capped: an endpoint cannot park a delivery for days. */
export const MAX_RETRY_AFTER_MS = 24 * 3600_000;

/**
 * Delay before the next attempt after attempt `failed` (1-based) failed, or null when that was the last one.
 * `random` in [0, 1) spreads retries so an endpoint coming back is not hit by every delivery at once.
 */
export function retryDelay(failed: number, random: () => number = Math.random): number | null {
  const base = RETRY_DELAYS_MS[failed - 1];
  if (base === undefined) return null;
  return Math.round(base * (1 - JITTER + 2 * JITTER * random()));
}

/** Retry-After as seconds or an HTTP date, in milliseconds from `now`; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: Date): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - now.getTime();
  if (!Number.isFinite(ms)) return null;
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}
