import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Postline, startPostline } from '../../bin/service.ts';
import { loadConfig } from '../../platform/config.ts';
import { createLogger } from '../../platform/logger.ts';
import { createOrganization } from '../../write-side/organizations/organization.commands.ts';
import { ADMIN_URL, createTestDatabaseUrl, TEST_POOL_SIZE } from '../support/databases.ts';
import { PATIENCE_MS } from '../support/patience.ts';
import { freePort, startServer } from '../support/process.ts';
import { type ApiResponse, apiClient } from '../support/service.ts';

/**
 * The database goes away under load and comes back. Process A (`postline serve`, a child process, so that
 * "alive" is literal) takes a send load while every backend of its database is terminated again and again, then
 * while the database refuses connections altogether. Process B (in this process: an uncaught error would fail
 * the file) shares the database without projections. Both must survive; every answer must be a 2xx or a 503
 * that says why and when to retry (never a 500); every acknowledged email must be readable afterwards; and the
 * LISTEN connections must be back by themselves: the log's NOTIFY reaches A's projection thread and B's
 * subscribers, and the checkpoints' NOTIFY empties B's caches. LOG_POLL_MS is an hour, far beyond the bounds
 * below, so that only a NOTIFY can be what woke them.
 */

const REQUESTS = 300;
const CONCURRENCY = 10;
/** After this many answers, every backend of the database is terminated. */
const TERMINATE_AFTER = new Set([30, 80, 130, 180, 230]);
/** Bound for what a NOTIFY brings (as for any condition: the machine may be busy), far below LOG_POLL_MS. */
const NOTIFY_BOUND_MS = PATIENCE_MS;

let env: Record<string, string>;
let databaseName: string;
let drop: () => Promise<void>;
let admin: pg.Client;
const dataDir = mkdtempSync(join(tmpdir(), 'postline-outage-'));

beforeAll(async () => {
  const db = await createTestDatabaseUrl();
  drop = db.drop;
  databaseName = new URL(db.url).pathname.slice(1);
  env = {
    DATABASE_URL: db.url,
    DATABASE_POOL_SIZE: String(TEST_POOL_SIZE),
    POSTLINE_SECRET_KEY: randomBytes(32).toString('base64'),
    POSTLINE_DATA_DIR: dataDir,
    REDIS_URL: '', // rate limits counted in PostgreSQL: they meet the outage too
    RATE_LIMIT_RPS: '100000',
    RATE_LIMIT_BATCH_RPS: '100000',
    AUTH_FAILURES_PER_MINUTE: '100000',
    LOG_POLL_MS: '3600000',
    PROJECTION_WAIT_MS: String(NOTIFY_BOUND_MS),
  };
  admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
});
afterAll(async () => {
  await admin?.query(`ALTER DATABASE ${databaseName} ALLOW_CONNECTIONS true`).catch(() => {});
  await admin?.end();
  await drop?.();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Terminates every backend of the test database (the admin's connection is to another one). */
async function terminateAll(): Promise<number> {
  const { rows } = await admin.query(
    'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
    [databaseName],
  );
  return rows[0].n;
}

const email = (i: number) => ({
  from: 'Outage <outage@outage.example>',
  to: [`delivered+o${i}@simulator.postline.dev`],
  subject: `outage ${i}`,
  text: 'Hi',
});

/** A 503 that tells the client why and when to come back. */
function expectRetryable(res: ApiResponse, codes: string[] = ['database_unavailable']) {
  expect(res.status, JSON.stringify(res.body)).toBe(503);
  expect(codes).toContain(res.body?.error?.code);
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
}

/** Resolves with what `check` gives once it gives something, or fails past `ms`. */
async function eventually<T>(what: string, ms: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  while (true) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the database goes away and comes back', () => {
  it('no process dies, no request fails with a 500, no acknowledged email is lost, LISTEN comes back by itself', async () => {
    const port = await freePort();
    const a = await startServer({ ...env, PORT: String(port) });
    let b: Postline | undefined;
    try {
      b = await startPostline(loadConfig({ ...env, PORT: '0' }), {
        smtp: false,
        projections: false,
        processes: false,
        log: createLogger('silent'),
      });
      const viaA = (key: string) => apiClient(`http://127.0.0.1:${port}`, key);
      const viaB = (key: string) => apiClient(`http://127.0.0.1:${b!.port}`, key);
      // B writes, A's projection thread applies it: it hears B's NOTIFY (a poll would take a minute).
      const org = await createOrganization(b.services, { name: 'Outage', plan: 'business' });
      await b.services.readYourWrites.waitFor(['api_keys'], org.position);
      const sender = viaA(org.testKey);

      // 1. Backends terminated under load.
      const answers: ApiResponse[] = [];
      const terminations: Promise<number>[] = [];
      let next = 0;
      const worker = async () => {
        while (next < REQUESTS) {
          const i = next++;
          const res = await sender.post('/v1/emails', email(i)).catch((error: Error) => {
            throw new Error(`no answer (${error.message}); A's exit code ${a.child.exitCode}: ${a.output()}`);
          });
          answers.push(res);
          if (TERMINATE_AFTER.has(answers.length)) terminations.push(terminateAll());
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      const terminated = await Promise.all(terminations);
      expect(terminated.every((n) => n > 0)).toBe(true);
      expect(a.child.exitCode, a.output()).toBeNull();

      const acknowledged: string[] = [];
      for (const res of answers) {
        if (res.status === 200) acknowledged.push(res.body.id);
        else {
          // A 503 projection_timeout says the email was saved (and carries its id).
          expectRetryable(res, ['database_unavailable', 'projection_timeout']);
          if (res.body.error.code === 'projection_timeout') {
            expect(res.body.id).toMatch(/^em_/);
            acknowledged.push(res.body.id);
          }
        }
      }
      expect(acknowledged.length).toBeGreaterThan(0);

      // 2. The database refuses every connection: every request is a 503 database_unavailable.
      await admin.query(`ALTER DATABASE ${databaseName} ALLOW_CONNECTIONS false`);
      await terminateAll();
      for (let i = 0; i < 5; i++) expectRetryable(await sender.post('/v1/emails', email(REQUESTS + i)));
      expectRetryable(await sender.get('/v1/emails?limit=1'));
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(503);
      expectRetryable(await viaB(org.testKey).get('/v1/emails?limit=1'));

      // 3. It comes back: both processes serve again by themselves.
      await admin.query(`ALTER DATABASE ${databaseName} ALLOW_CONNECTIONS true`);
      const first = await eventually('A sends again', 30_000, async () => {
        const res = await sender.post('/v1/emails', email(REQUESTS + 10));
        if (res.status !== 200) expectRetryable(res);
        return res.status === 200 ? res : undefined;
      });
      acknowledged.push(first.body.id);
      expect(a.child.exitCode, a.output()).toBeNull();

      // Every acknowledged email is there.
      const reader = viaA(org.testKey);
      const missing: string[] = [];
      let read = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (read < acknowledged.length) {
            const id = acknowledged[read++];
            const res = await reader.get(`/v1/emails/${id}`);
            if (res.status !== 200) missing.push(`${id}: ${res.status}`);
          }
        }),
      );
      expect(missing).toEqual([]);

      // A's projection thread hears B's appends again.
      const later = await createOrganization(b.services, { name: 'After', plan: 'pro' });
      await b.services.readYourWrites.waitFor(['api_keys'], later.position);

      // B's store hears A's appends again: a subscriber is woken within the bound.
      const head = await b.services.store.headPosition({ committed: true });
      const streams = new Set<string>();
      const subscription = b.services.store.subscribe({ from: head }, async (events) => {
        for (const e of events) streams.add(e.streamId);
      });
      try {
        const sent = await sender.post('/v1/emails', email(REQUESTS + 11));
        expect(sent.status).toBe(200);
        await eventually('B hears of the new email', NOTIFY_BOUND_MS, async () =>
          streams.has(`email-${sent.body.id}`) ? true : undefined,
        );
      } finally {
        await subscription.stop();
      }

      // B's caches hear the checkpoints' NOTIFY again: a key deleted through A is refused by B at once.
      const full = viaA(org.liveKey);
      const extra = await full.post('/v1/api-keys', { name: 'after the outage' });
      expect(extra.status).toBe(201);
      const extraOnB = viaB(extra.body.key);
      expect((await extraOnB.get('/v1/api-keys')).status).toBe(200);
      expect((await extraOnB.get('/v1/api-keys')).status).toBe(200); // answered from B's memory
      expect((await full.delete(`/v1/api-keys/${extra.body.id}`)).status).toBe(200);
      // Up to 7 s: below the 10 s after which B's cache reads the database anyway, so only a NOTIFY refuses.
      const refused = await eventually('B refuses the deleted key', 7000, async () => {
        const res = await extraOnB.get('/v1/api-keys');
        return res.status === 200 ? undefined : res;
      });
      expect(refused.status).toBe(401);
      expect(refused.body.error.code).toBe('invalid_api_key');
      expect(a.child.exitCode, a.output()).toBeNull();
    } finally {
      await b?.close();
      await a.stop();
    }
    expect(a.child.exitCode).toBe(0);
  });
});
