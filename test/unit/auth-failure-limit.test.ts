import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { AppError } from '../../platform/errors.ts';
import { AuthFailureLimit } from '../../platform/http/auth-failure-limit.ts';
import { MemoryRateLimiter } from '../../platform/http/rate-limit.ts';

const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e as AppError;
  }
  return undefined;
};

describe('AuthFailureLimit', () => {
  it('allows `limit` failures per address and minute, then refuses the address until the minute ends', async () => {
    const clock = new ManualClock('2026-01-01T10:00:05Z'); // 5 s into a minute
    const limit = new AuthFailureLimit(new MemoryRateLimiter(), 3, clock);
    const headers = [];
    for (let i = 0; i < 3; i++) headers.push(await limit.fail('198.51.100.1'));
    expect(headers.map((h) => h['X-RateLimit-Remaining'])).toEqual(['2', '1', '0']);
    expect(headers[0]).toMatchObject({ 'X-RateLimit-Limit': '3', 'X-RateLimit-Reset': '55' });
    const over = await limit.fail('198.51.100.1').catch((e: AppError) => e);
    expect(over).toBeInstanceOf(AppError);
    expect((over as AppError).code).toBe('rate_limit_exceeded');
    expect((over as AppError).headers).toMatchObject({ 'Retry-After': '55', 'X-RateLimit-Remaining': '0' });
    // Refused before any look-up, valid key or not, until the minute ends; other addresses are not.
    clock.advance(54_000);
    expect(refusal(() => limit.check('198.51.100.1'))?.code).toBe('rate_limit_exceeded');
    expect(refusal(() => limit.check('198.51.100.2'))).toBeUndefined();
    clock.advance(1_000);
    expect(refusal(() => limit.check('198.51.100.1'))).toBeUndefined();
    expect((await limit.fail('198.51.100.1'))['X-RateLimit-Remaining']).toBe('2');
  });
});
