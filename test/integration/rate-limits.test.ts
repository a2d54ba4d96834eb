import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { startPostline } from '../../bin/service.ts';
import { loadConfig } from '../../platform/config.ts';
import { createLogger } from '../../platform/logger.ts';
import { createTestDatabaseUrl } from '../support/databases.ts';
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
    const svc: TestService = await startTestService({ env: { RATE_LIMIT_RPS: '10' } });
    cleanup.push(() => svc.close());
    const org = await svc.createOrg();
    // Align with the start of a one-second window so the burst lands in one window.
    await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000)));
    // 30 at once: even if a slow machine spreads them over two windows, at most 20 pass.
    const responses = await burst(org.live, 30);
    const ok = responses.filter((r) => r.status === 200);
    const limited = responses.filter((r) => r.status === 429);
    expect(ok.length).toBeLessThanOrEqual(20);
    expect(limited.length).toBeGreaterThanOrEqual(10);
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
    const svc: TestService = await startTestService({ env: { RATE_LIMIT_RPS: '2' } });
    cleanup.push(() => svc.close());
    const org = await svc.createOrg();
    await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000)));
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
        POSTLINE_SECRET_KEY: randomBytes(32).toString('base64'),
        POSTLINE_DATA_DIR: `/tmp/postline-rl-${randomBytes(4).toString('hex')}`,
        LOG_LEVEL: 'silent',
        RATE_LIMIT_RPS: '6',
        ...(store === 'redis' ? { REDIS_URL: 'redis://127.0.0.1:6379' } : {}),
      };
      const log = createLogger('silent');
      const a = await startPostline(loadConfig(env), { log });
      const b = await startPostline(loadConfig(env), { log });
      cleanup.push(
        () => a.close(),
        () => b.close(),
      );
      const { createOrganization } = await import('../../write-side/organizations/commands.ts');
      const org = await createOrganization(a.services, { name: 'Shared', plan: 'pro' });
      await a.services.readYourWrites.waitFor(['api_keys'], org.position);
      await b.services.readYourWrites.waitFor(['api_keys'], org.position);
      const ca = apiClient(`http://127.0.0.1:${a.port}`, org.liveKey);
      const cb = apiClient(`http://127.0.0.1:${b.port}`, org.liveKey);
      await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000)));
      const responses = (await Promise.all([burst(ca, 10), burst(cb, 10)])).flat();
      const statuses = responses.map((r) => r.status);
      // One shared budget of 6 per second (12 if the burst straddles two windows), not 6 per process.
      expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(12);
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(8);
      if (store === 'redis') {
        const redis = new Redis('redis://127.0.0.1:6379');
        const keys = await redis.keys(`postline:rl:${org.orgId}:*`);
        redis.disconnect();
        expect(keys.length).toBeGreaterThan(0);
      }
    });
  }
});
