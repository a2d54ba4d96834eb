import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { startPostline } from '../../bin/service.ts';
import { ManualClock } from '../../platform/clock.ts';
import { loadConfig } from '../../platform/config.ts';
import { migrate } from '../../platform/db/migrations.ts';
import {
  MemoryRateLimiter,
  PostgresRateLimiter,
  type RateLimiter,
  RedisRateLimiter,
  rateLimitMigrations,
} from '../../platform/http/rate-limit.ts';
import { createLogger } from '../../platform/logger.ts';
import { createTestDatabaseUrl, openTestDatabase, TEST_POOL_SIZE } from '../support/databases.ts';
import { freePort } from '../support/process.ts';
import { apiClient, startTestService, type TestService } from '../support/service.ts';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

/** Fires n requests at once; returns the statuses and the responses. */
async function burst(client: ReturnType<typeof apiClient>, n: number) {
  return Promise.all(Array.from({ length: n }, () => client.get('/v1/api-keys')));
}

describe('rate limits', () => {
  it('sets the headers on every authenticated response and answers 429 with Retry-After past 10/s', async () => {
    // The service's clock stands still: the whole burst falls into one window of the limit.
    const svc: TestService = await startTestService({
      clock: new ManualClock(new Date()),
      env: { RATE_LIMIT_RPS: '10' },
    });
    cleanup.push(() => svc.close());
    const org = await svc.createOrg();
    const responses = await burst(org.live, 30);
    const ok = responses.filter((r) => r.status === 200);
    const limited = responses.filter((r) => r.status === 429);
    expect(ok.length).toBe(10);
    expect(limited.length).toBe(20);
    for (const r of responses) {
      expect(r.headers['x-ratelimit-limit']).toBe('10');
      expect(Number(r.headers['x-ratelimit-remaining'])).toBeGreaterThanOrEqual(0);
      expect(Number(r.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(1);
    }
    expect(limited[0].body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
    expect(Number(limited[0].headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Another organization has its own budget.
    const other = await svc.createOrg();
    expect((await other.live.get('/v1/api-keys')).status).toBe(200);
  });

  it('counts requests that fail otherwise too, and answers them 429 past the limit', async () => {
    const svc: TestService = await startTestService({
      clock: new ManualClock(new Date()),
      env: { RATE_LIMIT_RPS: '2' },
    });
    cleanup.push(() => svc.close());
    const org = await svc.createOrg();
    // Counted while the body is read: within the limit the body's own error, with the headers.
    const malformed = await org.live.post('/v1/emails', '{"from":');
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('malformed_json');
    expect(malformed.headers['x-ratelimit-remaining']).toBe('1');
    expect((await org.live.get('/v1/api-keys')).status).toBe(200);
    // Past it, the refusal wins over a bad body, a bad request and an unknown route alike.
    for (const r of [
      await org.live.post('/v1/emails', '{"from":'),
      await org.live.post('/v1/emails', { to: 'nobody' }),
      await org.live.get('/v1/nothing-here'),
    ]) {
      expect(r.status).toBe(429);
      expect(r.body.error.code).toBe('rate_limit_exceeded');
      expect(r.headers['x-ratelimit-remaining']).toBe('0');
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
  });

  for (const store of ['postgres', 'redis'] as const) {
    it(`shares the counter between two processes through ${store}`, async () => {
      const { url, drop } = await createTestDatabaseUrl();
      cleanup.push(drop);
      const env = {
        PORT: '0',
        DATABASE_URL: url,
        // Test files share the server's connections (test/support/databases.ts).
        DATABASE_POOL_SIZE: String(TEST_POOL_SIZE),
        POSTLINE_SECRET_KEY: randomBytes(32).toString('base64'),
        POSTLINE_DATA_DIR: `/tmp/postline-rl-${randomBytes(4).toString('hex')}`,
        LOG_LEVEL: 'silent',
        RATE_LIMIT_RPS: '6',
        ...(store === 'redis' ? { REDIS_URL: 'redis://127.0.0.1:6379' } : {}),
      };
      const log = createLogger('silent');
      // One clock standing still for both: the bursts fall into one window of the limit.
      const clock = new ManualClock(new Date());
      const a = await startPostline(loadConfig(env), { log, smtp: false, clock });
      const b = await startPostline(loadConfig(env), { log, smtp: false, clock });
      cleanup.push(
        () => a.close(),
        () => b.close(),
      );
      const { createOrganization } = await import('../../write-side/organizations/organization.commands.ts');
      const org = await createOrganization(a.services, { name: 'Shared', plan: 'pro' });
      await a.services.readYourWrites.waitFor(['api_keys'], org.position);
      await b.services.readYourWrites.waitFor(['api_keys'], org.position);
      const ca = apiClient(`http://127.0.0.1:${a.port}`, org.liveKey);
      const cb = apiClient(`http://127.0.0.1:${b.port}`, org.liveKey);
      const responses = (await Promise.all([burst(ca, 10), burst(cb, 10)])).flat();
      const statuses = responses.map((r) => r.status);
      // One shared budget of 6 per second, not 6 per process.
      expect(statuses.filter((s) => s === 200).length).toBe(6);
      expect(statuses.filter((s) => s === 429).length).toBe(14);
      if (store === 'redis') {
        const redis = new Redis('redis://127.0.0.1:6379');
        const keys = await redis.keys(`postline:rl:${org.orgId}:*`);
        redis.disconnect();
        expect(keys.length).toBeGreaterThan(0);
      }
    });
  }
});

describe('handlers without a key', () => {
  it('limits tracking links and downloads per client address, with the headers; health checks are free', async () => {
    // The service's clock stands still: the whole burst falls into one window of the limit.
    const svc: TestService = await startTestService({
      clock: new ManualClock(new Date()),
      env: { PUBLIC_RATE_LIMIT_RPS: '5' },
    });
    cleanup.push(() => svc.close());
    const get = async (path: string) => {
      const res = await fetch(`${svc.baseUrl}${path}`);
      await res.arrayBuffer();
      return res;
    };
    // 15 at once over both handlers: 5 pass.
    const responses = await Promise.all(
      Array.from({ length: 15 }, (_, i) => get(i % 2 ? '/t/c/nope' : '/blobs/blob_nope?expires=1&sig=x')),
    );
    const passed = responses.filter((r) => r.status === 404);
    const limited = responses.filter((r) => r.status === 429);
    expect(passed.length).toBe(5);
    expect(limited.length).toBe(10);
    for (const r of responses) {
      expect(r.headers.get('x-ratelimit-limit')).toBe('5');
      expect(Number(r.headers.get('x-ratelimit-reset'))).toBeGreaterThanOrEqual(1);
    }
    expect(Number(limited[0].headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const health = await get('/healthz');
    expect(health.status).toBe(200);
    expect(health.headers.get('x-ratelimit-limit')).toBeNull();
  });
});

describe('failed authentications per client address', () => {
  it('answers 401 with X-RateLimit-* up to the limit, then 429 to unknown keys from that address, and serves its valid keys', async () => {
    // TRUST_PROXY: the loopback peer is a proxy, so X-Forwarded-For names the client and a test can be several.
    // The service's clock stands still: the minute of the counts does not end between the test's steps.
    const svc = await startTestService({
      clock: new ManualClock(new Date()),
      env: { AUTH_FAILURES_PER_MINUTE: '5', TRUST_PROXY: 'loopback' },
    });
    cleanup.push(() => svc.close());
    const org = await svc.createOrg();
    const from = (address: string) => ({ 'x-forwarded-for': address });
    // Twice the limit and one more, at once: exactly the limit are told 401, the others 429.
    const guesses = await Promise.all(
      Array.from({ length: 11 }, (_, i) =>
        svc.client(`pk_live_guess${i}`).get('/v1/api-keys', from('203.0.113.7')),
      ),
    );
    const unauthorized = guesses.filter((r) => r.status === 401);
    const limited = guesses.filter((r) => r.status === 429);
    expect(unauthorized.length).toBe(5);
    expect(limited.length).toBe(6);
    for (const r of unauthorized) {
      expect(r.body.error.code).toBe('invalid_api_key');
      expect(r.headers['x-ratelimit-limit']).toBe('5');
    }
    expect(unauthorized.map((r) => r.headers['x-ratelimit-remaining']).sort()).toEqual([
      '0',
      '1',
      '2',
      '3',
      '4',
    ]);
    for (const r of limited) {
      expect(r.body.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
      expect(r.headers['x-ratelimit-limit']).toBe('5');
      expect(r.headers['x-ratelimit-remaining']).toBe('0');
      expect(Number(r.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(1);
      expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    // Only failures are limited: a valid key from the blocked address is served (whoever shares the address with
    // a guesser keeps working), another unknown key is refused, and other addresses are not touched.
    expect((await org.live.get('/v1/api-keys', from('203.0.113.7'))).status).toBe(200);
    const again = await svc.client('pk_live_guess11').get('/v1/api-keys', from('203.0.113.7'));
    expect([again.status, again.body.error.code]).toEqual([429, 'rate_limit_exceeded']);
    expect(again.body.error.message).toMatch(/failed authentications/);
    expect((await org.live.get('/v1/api-keys', from('203.0.113.8'))).status).toBe(200);
    const other = await svc.client('pk_live_guess').get('/v1/api-keys', from('203.0.113.8'));
    expect(other.status).toBe(401);
    expect(other.headers['x-ratelimit-remaining']).toBe('4');
    // A request without a key guesses nothing: it is not counted as a failure, and told what is missing; it
    // counts against the address's limit of requests without a key, whose headers it carries.
    const keyless = await svc.client().get('/v1/api-keys', from('203.0.113.9'));
    expect(keyless.body.error.code).toBe('missing_api_key');
    expect(keyless.headers['x-ratelimit-limit']).toBe('50');
    expect(keyless.headers['x-ratelimit-remaining']).toBe('49');
    expect(Number(keyless.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(1);
  });

  it('without TRUST_PROXY the peer is the client: X-Forwarded-For cannot pick a fresh address', async () => {
    const svc = await startTestService({
      clock: new ManualClock(new Date()),
      env: { AUTH_FAILURES_PER_MINUTE: '2' },
    });
    cleanup.push(() => svc.close());
    const statuses = [];
    for (let i = 0; i < 4; i++) {
      const r = await svc
        .client(`pk_test_guess${i}`)
        .get('/v1/domains', { 'x-forwarded-for': `198.51.100.${i}` });
      statuses.push(r.status);
    }
    expect(statuses).toEqual([401, 401, 429, 429]);
  });

  it('warns once, in its log, when requests carry X-Forwarded-For and TRUST_PROXY is not set', async () => {
    const lines: string[] = [];
    const log = createLogger(
      'info',
      new Writable({ write: (chunk, _e, done) => done(void lines.push(String(chunk))) }),
    );
    const untrusted = await startTestService({ log });
    cleanup.push(() => untrusted.close());
    const org = await untrusted.createOrg();
    const warnings = () => lines.filter((l) => l.includes('TRUST_PROXY is not set'));
    expect((await org.live.get('/v1/api-keys')).status).toBe(200);
    expect(warnings()).toEqual([]);
    for (let i = 0; i < 3; i++)
      expect((await org.live.get('/v1/api-keys', { 'x-forwarded-for': `198.51.100.${i}` })).status).toBe(200);
    expect(warnings()).toHaveLength(1);
    expect(JSON.parse(warnings()[0])).toMatchObject({
      level: 40,
      peer: expect.stringContaining('127.0.0.1'),
    });

    // Behind a proxy it trusts, the service has nothing to say.
    const trusted: string[] = [];
    const behindProxy = await startTestService({
      env: { TRUST_PROXY: 'loopback' },
      log: createLogger(
        'info',
        new Writable({ write: (chunk, _e, done) => done(void trusted.push(String(chunk))) }),
      ),
    });
    cleanup.push(() => behindProxy.close());
    const other = await behindProxy.createOrg();
    expect((await other.live.get('/v1/api-keys', { 'x-forwarded-for': '198.51.100.9' })).status).toBe(200);
    expect(trusted.filter((l) => l.includes('TRUST_PROXY'))).toEqual([]);
  });
});

describe('when Redis, which holds the counters, is away', () => {
  it('answers 503 database_unavailable with Retry-After, says so once in the log, and nothing on stderr', async () => {
    const lines: string[] = [];
    const stderr = vi.spyOn(console, 'error').mockImplementation(() => {});
    cleanup.push(async () => stderr.mockRestore());
    // Nothing listens there: every count fails, as while Redis restarts.
    const svc = await startTestService({
      env: { REDIS_URL: `redis://127.0.0.1:${await freePort()}` },
      log: createLogger(
        'info',
        new Writable({ write: (chunk, _e, done) => done(void lines.push(String(chunk))) }),
      ),
    });
    cleanup.push(() => svc.close());
    const org = await svc.createOrg();
    for (const request of [
      () => org.live.get('/v1/api-keys'),
      () => svc.client('pk_live_unknown').get('/v1/api-keys'),
      () => svc.client().get('/v1/api-keys'),
    ]) {
      const r = await request();
      expect(r.status).toBe(503);
      expect(r.body.error.code).toBe('database_unavailable');
      expect(r.headers['retry-after']).toBe('1');
    }
    expect(lines.filter((l) => l.includes('Redis')).length).toBe(1);
    expect(lines.filter((l) => l.includes('unhandled error'))).toEqual([]);
    expect(stderr.mock.calls.filter((c) => String(c[0]).includes('ioredis'))).toEqual([]);
  });
});

describe.each(['memory', 'postgres', 'redis'] as const)('the %s counter', (kind) => {
  it('lets exactly the limit through in a window, counts down Remaining, and starts again in the next', async () => {
    let limiter: RateLimiter;
    if (kind === 'memory') limiter = new MemoryRateLimiter();
    else if (kind === 'redis') limiter = new RedisRateLimiter(new Redis('redis://127.0.0.1:6379'));
    else {
      const { db, dispose } = await openTestDatabase();
      await migrate(db, rateLimitMigrations);
      cleanup.push(dispose);
      limiter = new PostgresRateLimiter(db);
    }
    cleanup.push(() => limiter.close());
    const key = `count-test:${randomBytes(6).toString('hex')}`;
    // A whole window ahead of any other test, so that nothing else counts in it.
    const now = (Math.floor(Date.now() / 1000) + 3600) * 1000;
    const hits = await Promise.all(Array.from({ length: 25 }, () => limiter.hit(key, 10, now + 10)));
    expect(hits.filter((h) => h.allowed)).toHaveLength(10);
    expect(
      hits
        .filter((h) => h.allowed)
        .map((h) => h.remaining)
        .sort((a, b) => b - a),
    ).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    expect(hits.filter((h) => !h.allowed).every((h) => h.remaining === 0 && h.resetMs <= 990)).toBe(true);
    expect((await limiter.hit(key, 10, now + 1000)).allowed).toBe(true);
  });
});

describe('the postgres counter, shared by two processes', () => {
  it('gives every hit of requests in flight together its own count, whichever process counted it', async () => {
    const { db, dispose } = await openTestDatabase();
    await migrate(db, rateLimitMigrations);
    cleanup.push(dispose);
    // Two processes' limiters on one database, each counting its requests in flight together in one statement.
    const [a, b] = [new PostgresRateLimiter(db), new PostgresRateLimiter(db)];
    const [key, other] = [
      `shared:${randomBytes(6).toString('hex')}`,
      `other:${randomBytes(6).toString('hex')}`,
    ];
    const now = (Math.floor(Date.now() / 1000) + 7200) * 1000;
    const hits = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).hit(i % 8 === 0 ? other : key, 100, now)),
    );
    const counts = (k: string) =>
      hits
        .filter((_, i) => (i % 8 === 0 ? other : key) === k)
        .map((h) => 100 - h.remaining)
        .sort((x, y) => x - y);
    expect(counts(key)).toEqual(Array.from({ length: 35 }, (_, i) => i + 1));
    expect(counts(other)).toEqual([1, 2, 3, 4, 5]);
    // The next window starts again, in the same statement as hits of the window before it.
    const next = await Promise.all([a.hit(key, 100, now + 1000), a.hit(key, 100, now + 999)]);
    expect(next.map((h) => 100 - h.remaining)).toEqual([1, 36]);
  });
});
