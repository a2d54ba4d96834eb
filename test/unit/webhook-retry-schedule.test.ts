import { describe, expect, it } from 'vitest';
import {
  MAX_ATTEMPTS,
  parseRetryAfter,
  RETRY_DELAYS_MS,
  retryDelay,
} from '../../processes/webhooks/retry-schedule.ts';

describe('webhook retry schedule', () => {
  it('is 8 attempts: at once, then about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    expect(MAX_ATTEMPTS).toBe(8);
    expect(RETRY_DELAYS_MS).toEqual([5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 36e6]);
    expect(RETRY_DELAYS_MS.reduce((a, b) => a + b, 0) / 3600_000).toBeCloseTo(27.6, 1);
  });

  it('spreads each delay by ±20 %', () => {
    for (let failed = 1; failed < MAX_ATTEMPTS; failed++) {
      const base = RETRY_DELAYS_MS[failed - 1];
      expect(retryDelay(failed, () => 0)).toBe(base * 0.8);
      expect(retryDelay(failed, () => 0.5)).toBe(base);
      expect(retryDelay(failed, () => 0.999999)).toBeLessThanOrEqual(base * 1.2);
      const d = retryDelay(failed)!;
      expect(d).toBeGreaterThanOrEqual(base * 0.8);
      expect(d).toBeLessThanOrEqual(base * 1.2);
    }
  });

  it('has no delay after the 8th attempt: the delivery is exhausted', () => {
    expect(retryDelay(8)).toBeNull();
  });

  it('reads Retry-After as seconds or an HTTP date, capped at a day', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 01:00:00 GMT', now)).toBe(3600_000);
    expect(parseRetryAfter('999999999', now)).toBe(24 * 3600_000);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
  });
});
