import { describe, expect, it } from 'vitest';
import type { AuthContext } from '../../platform/auth/auth-context.ts';
import { AuthFailureLimit } from '../../platform/auth/auth-failure-limit.ts';
import { ManualClock } from '../../platform/clock.ts';
import type { AppError } from '../../platform/errors.ts';
import { MemoryRateLimiter } from '../../platform/http/rate-limit.ts';

const caller: AuthContext = {
  orgId: 'org_1',
  plan: 'pro',
  mode: 'live',
  keyId: 'key_1',
  permission: 'full_access',
  domainId: null,
};
/** The key look-up: one valid key. */
const lookUp = async (key: string) => (key === 'pk_live_valid' ? caller : null);

describe('AuthFailureLimit', () => {
  it('allows `limit` failures per address and minute, then refuses the address’s unknown keys until the minute ends', async () => {
    const clock = new ManualClock('2026-01-01T10:00:05Z'); // 5 s into a minute
    const limit = new AuthFailureLimit(new MemoryRateLimiter(), 3, clock);
    const attempt = (address: string, key: string | undefined) =>
      limit.authenticate(address, key, lookUp).catch((e: AppError) => e);
    const failures = [];
    for (let i = 0; i < 3; i++)
      failures.push((await attempt('198.51.100.1', `pk_live_guess${i}`)) as AppError);
    expect(failures.map((e) => e.code)).toEqual(['invalid_api_key', 'invalid_api_key', 'invalid_api_key']);
    expect(failures.map((e) => e.headers['X-RateLimit-Remaining'])).toEqual(['2', '1', '0']);
    expect(failures[0].headers).toMatchObject({ 'X-RateLimit-Limit': '3', 'X-RateLimit-Reset': '55' });
    const over = (await attempt('198.51.100.1', undefined)) as AppError;
    expect(over.code).toBe('rate_limit_exceeded');
    expect(over.headers).toMatchObject({ 'Retry-After': '55', 'X-RateLimit-Remaining': '0' });

    // Only failures are limited: the address's valid key is served, its unknown keys refused; other addresses
    // are not touched.
    clock.advance(54_000);
    expect(await attempt('198.51.100.1', 'pk_live_valid')).toEqual(caller);
    expect(((await attempt('198.51.100.1', 'pk_live_guess4')) as AppError).code).toBe('rate_limit_exceeded');
    expect(((await attempt('198.51.100.2', 'pk_live_guess5')) as AppError).code).toBe('invalid_api_key');
    clock.advance(1_000);
    const next = (await attempt('198.51.100.1', 'pk_live_guess6')) as AppError;
    expect([next.code, next.headers['X-RateLimit-Remaining']]).toEqual(['invalid_api_key', '2']);
  });
});
