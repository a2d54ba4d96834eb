import { describe, expect, it } from 'vitest';
import {
  EMAIL_RETRIES,
  maxAttempts,
  nextAttemptAt,
  retryDelay,
  WEBHOOK_RETRIES,
} from '../../processes/retry-schedule.ts';

const hours = (delays: readonly number[]) => delays.reduce((a, b) => a + b, 0) / 3600_000;

describe('email retry schedule', () => {
  it('is 12 attempts over about 52 hours, without jitter', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    expect(maxAttempts(EMAIL_RETRIES)).toBe(12);
    expect(nextAttemptAt(EMAIL_RETRIES, 1, now)?.getTime()).toBe(now.getTime() + 60_000);
    expect(nextAttemptAt(EMAIL_RETRIES, 1, now, () => 0.999)?.getTime()).toBe(now.getTime() + 60_000);
    expect(nextAttemptAt(EMAIL_RETRIES, 11, now)).not.toBeNull();
    expect(nextAttemptAt(EMAIL_RETRIES, 12, now)).toBeNull();
    expect(Math.round(hours(EMAIL_RETRIES.delaysMs))).toBe(52);
  });
});

describe('webhook retry schedule', () => {
  it('is 8 attempts: at once, then about 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    expect(maxAttempts(WEBHOOK_RETRIES)).toBe(8);
    expect(WEBHOOK_RETRIES.delaysMs).toEqual([5e3, 3e5, 18e5, 72e5, 18e6, 36e6, 36e6]);
    expect(hours(WEBHOOK_RETRIES.delaysMs)).toBeCloseTo(27.6, 1);
  });

  it('spreads each delay by ±20 %', () => {
    for (let failed = 1; failed < 8; failed++) {
      const base = WEBHOOK_RETRIES.delaysMs[failed - 1];
      expect(retryDelay(WEBHOOK_RETRIES, failed, () => 0)).toBe(base * 0.8);
      expect(retryDelay(WEBHOOK_RETRIES, failed, () => 0.5)).toBe(base);
      expect(retryDelay(WEBHOOK_RETRIES, failed, () => 0.999999)).toBeLessThanOrEqual(base * 1.2);
      const d = retryDelay(WEBHOOK_RETRIES, failed)!;
      expect(d).toBeGreaterThanOrEqual(base * 0.8);
      expect(d).toBeLessThanOrEqual(base * 1.2);
    }
  });

  it('has no delay after the 8th attempt: the delivery is exhausted', () => {
    expect(retryDelay(WEBHOOK_RETRIES, 8)).toBeNull();
  });
});
