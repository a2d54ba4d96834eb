import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { PATIENCE } from '../support/patience.ts';
import { freePort } from '../support/process.ts';
import { type apiClient, startTestService } from '../support/service.ts';

/** The tests start a Redis server of their own: the machine's binary (Redis's Debian package has it). */
const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0;
if (!hasRedisServer)
  console.log('Redis outage tests skipped: redis-server is not on the PATH (apt-get install redis-server)');

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

/** A Redis of the test's own on `port`, without persistence: resolves once it accepts connections. */
async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      if (out.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out}`)));
  });
  return child;
}

async function stopRedis(child: ChildProcess) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/**
 * While Redis is away, every request is answered 503, never served uncounted. (At once, not after the client's
 * reconnection attempts: how fast is measured, not asserted; each request waited about 10 s before.)
 */
async function expectUnavailable(client: ReturnType<typeof apiClient>) {
  for (let i = 0; i < 3; i++) {
    const r = await client.get('/v1/api-keys');
    expect([r.status, r.body.error?.code, r.headers['retry-after']]).toEqual([
      503,
      'database_unavailable',
      '1',
    ]);
  }
}

/** Requests at once are served and each one counted: their Remaining are consecutive. */
async function expectCounted(client: ReturnType<typeof apiClient>) {
  const responses = await Promise.all(Array.from({ length: 3 }, () => client.get('/v1/api-keys')));
  expect(responses.map((r) => r.status)).toEqual([200, 200, 200]);
  const remaining = responses.map((r) => Number(r.headers['x-ratelimit-remaining'])).sort((a, b) => b - a);
  expect(remaining).toEqual([remaining[0], remaining[0] - 1, remaining[0] - 2]);
}

describe.skipIf(!hasRedisServer)('when Redis, which holds the counters, comes and goes', () => {
  it('answers 503 at once while it is away, before its first start and after a restart, and counts again once it is back', async () => {
    const port = await freePort();
    // The service's clock stands still: each burst falls into one window of the limit.
    const svc = await startTestService({
      clock: new ManualClock(new Date()),
      env: { REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_RPS: '1000' },
    });
    cleanup.push(() => svc.close());
    const org = await svc.createOrg();
    // The service started before Redis.
    await expectUnavailable(org.live);

    let redis = await startRedis(port);
    cleanup.push(() => stopRedis(redis));
    await vi.waitFor(async () => expect((await org.live.get('/v1/api-keys')).status).toBe(200), PATIENCE);
    await expectCounted(org.live);

    await stopRedis(redis);
    await expectUnavailable(org.live);

    redis = await startRedis(port);
    await vi.waitFor(async () => expect((await org.live.get('/v1/api-keys')).status).toBe(200), PATIENCE);
    await expectCounted(org.live);
  });
});
