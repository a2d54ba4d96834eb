import { describe, expect, it } from 'vitest';
import { MAX_RETRY_AFTER_MS, parseRetryAfter } from '../../processes/webhooks/retry-after.ts';

describe('webhook Retry-After', () => {
  it('reads Retry-After as seconds or an HTTP date, capped at a day', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    expect(MAX_RETRY_AFTER_MS).toBe(24 * 3600_000);
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 01:00:00 GMT', now)).toBe(3600_000);
    expect(parseRetryAfter('999999999', now)).toBe(24 * 3600_000);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
  });
});
