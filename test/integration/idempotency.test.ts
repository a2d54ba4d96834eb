import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { AuthContext } from '../../platform/auth/auth-context.ts';
import { ManualClock } from '../../platform/clock.ts';
import { connectPostgres } from '../../platform/db/database.ts';
import { isDatabaseUnavailable } from '../../platform/db/unavailable.ts';
import { AppError } from '../../platform/errors.ts';
import { PostgresEventStore } from '../../platform/eventstore/postgres/store.ts';
import { IdempotencyKeys } from '../../platform/idempotency/idempotency.ts';
import { ADMIN_URL, createTestDatabaseUrl, openTestDatabase, TEST_POOL_SIZE } from '../support/databases.ts';
import { PATIENCE } from '../support/patience.ts';
import { type TestOrg, useTestService, whileProjectionsStopped } from '../support/service.ts';

const auth: AuthContext = {
  orgId: 'org_1',
  plan: 'pro',
  mode: 'live',
  keyId: 'key_1',
  permission: 'full_access',
  domainId: null,
};
let store: PostgresEventStore;
let keys: IdempotencyKeys;
let close: () => Promise<void>;
const clock = new ManualClock('2026-03-01T00:00:00Z');
const now = () => clock.now();

beforeAll(async () => {
  const { db, dispose } = await openTestDatabase();
  store = await PostgresEventStore.create(db);
  keys = new IdempotencyKeys(store);
  close = async () => {
    await store.close();
    await dispose();
  };
});
afterAll(() => close());

/** A request's hash as `requestHash` gives it, for a body named by `name`. */
const hashOf = (name: string) => ({ hash: name, legacy: name });

describe('Idempotency-Key', () => {
  it('answers 409 to a duplicate that arrives while the first is in flight', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let runs = 0;
    const first = keys.run(auth, 'k-flight', hashOf('h1'), now, async () => {
      runs++;
      await gate;
      return { status: 200, body: { id: 'em_1' } };
    });
    await vi.waitFor(() => expect(runs).toBe(1), PATIENCE); // the first holds the claim
    const second = await keys
      .run(auth, 'k-flight', hashOf('h1'), now, async () => {
        runs++;
        return { status: 200, body: { id: 'em_2' } };
      })
      .catch((e) => e);
    expect(second).toBeInstanceOf(AppError);
    expect(second.code).toBe('idempotency_request_in_flight');
    release();
    expect(await first).toEqual({ status: 200, body: { id: 'em_1' } });
    expect(runs).toBe(1);
  });

  it('lets exactly one of two simultaneous duplicates act', async () => {
    let runs = 0;
    // The winner runs until the loser is answered: the loser meets a request in flight, however slow the machine.
    const { promise: held, resolve: release } = Promise.withResolvers<void>();
    const run = async () => {
      runs++;
      await held;
      return { status: 200, body: { n: runs } };
    };
    const both = [
      keys.run(auth, 'k-race', hashOf('h'), now, run),
      keys.run(auth, 'k-race', hashOf('h'), now, run),
    ];
    const loser = await Promise.race(
      both.map((p) =>
        p.then(
          () => 'answered first',
          (e) => e,
        ),
      ),
    );
    expect(loser).toBeInstanceOf(AppError);
    expect(loser.code).toBe('idempotency_request_in_flight');
    release();
    const results = await Promise.allSettled(both);
    expect(runs).toBe(1);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  });

  it('forgets a key after 24 hours', async () => {
    let runs = 0;
    const run = async () => ({ status: 200, body: { n: ++runs } });
    await keys.run(auth, 'k-window', hashOf('h'), now, run);
    clock.advance(23 * 3600_000);
    expect((await keys.run(auth, 'k-window', hashOf('h'), now, run)).replayed).toBe(true);
    clock.advance(2 * 3600_000);
    const fresh = await keys.run(auth, 'k-window', hashOf('h-other-body'), now, run);
    expect(fresh.replayed).toBeUndefined();
    expect(runs).toBe(2);
  });

  it('runs a request that failed on the server side again, on the ids of its first claim', async () => {
    const newIds = () => [`em_${Math.random()}`];
    const first = await keys
      .run(
        auth,
        'k-fail',
        hashOf('h'),
        now,
        async (claim) => {
          expect(claim.resumed).toBe(false);
          throw new AppError('projection_timeout', 'saved, not readable yet', {}, { id: claim.ids[0] });
        },
        { newIds },
      )
      .catch((e) => e);
    expect(first.code).toBe('projection_timeout');
    const retry = await keys.run(
      auth,
      'k-fail',
      hashOf('h'),
      now,
      async (claim) => ({ status: 200, body: claim }),
      {
        newIds,
      },
    );
    expect(retry).toEqual({ status: 200, body: { ids: [first.details.id], resumed: true } });
  });

  it('keeps a key that failed on the server side bound to its body', async () => {
    await expect(
      keys.run(auth, 'k-fail-bound', hashOf('h'), now, async () => {
        throw new Error('database down');
      }),
    ).rejects.toThrow('database down');
    const other = await keys
      .run(auth, 'k-fail-bound', hashOf('h-other'), now, async () => ({
        status: 200,
        body: {},
      }))
      .catch((e) => e);
    expect(other.code).toBe('idempotency_key_reused');
  });

  it('resumes a claim whose request never finished once its lease is over, on the same ids', async () => {
    let n = 0;
    const newIds = () => [`em_${++n}`];
    let claimed = false;
    const crashed = keys.run(
      auth,
      'k-crash',
      hashOf('h'),
      now,
      () => {
        claimed = true;
        return new Promise(() => {});
      },
      { newIds, leaseMs: 60_000 },
    );
    void crashed;
    await vi.waitFor(() => expect(claimed).toBe(true), PATIENCE);
    const early = await keys
      .run(auth, 'k-crash', hashOf('h'), now, async () => ({ status: 200, body: {} }), {
        newIds,
        leaseMs: 60_000,
      })
      .catch((e) => e);
    expect(early.code).toBe('idempotency_request_in_flight');
    clock.advance(61_000);
    const late = await keys.run(
      auth,
      'k-crash',
      hashOf('h'),
      now,
      async (claim) => ({ status: 200, body: claim }),
      {
        newIds,
        leaseMs: 60_000,
      },
    );
    expect(late.body).toEqual({ ids: ['em_1'], resumed: true });
  });
});

describe('Idempotency-Key over HTTP, when the read models lag', () => {
  let org: TestOrg;
  const email = {
    from: 'a@acme.example',
    to: ['delivered@simulator.postline.dev'],
    subject: 'Hi',
    text: 'Hi',
  };

  const svc = useTestService(() => ({ env: { PROJECTION_WAIT_MS: '200' } }));
  beforeAll(async () => {
    org = await svc.createOrg('pro');
  });

  const queuedIds = async () =>
    (await svc.postline.services.store.readAll())
      .filter((e) => e.type === 'EmailQueued' && e.metadata.orgId === org.orgId)
      .map((e) => (e.data as { emailId: string }).emailId);

  it('answers a send at once (its row written ahead of the read model), and retries of the key send no other', async () => {
    const headers = { 'idempotency-key': 'lagging-send' };
    const { first, again } = await whileProjectionsStopped(svc, async () => {
      const first = await org.test.post('/v1/emails', email, headers);
      const again = await org.test.post('/v1/emails', email, headers);
      return { first, again };
    });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ id: expect.stringMatching(/^em_/), status: 'queued' });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    await svc.postline.runner.caughtUp();
    expect(await queuedIds()).toEqual([first.body.id]);
  });

  it("answers a batch's 503 with its items, and its retries send none of them again", async () => {
    const before = (await queuedIds()).length;
    await svc.postline.runner.stop();
    const headers = { 'idempotency-key': 'lagging-batch' };
    const batch = [email, { ...email, to: [] }, { ...email, subject: 'Second' }];
    const first = await org.test.post('/v1/emails/batch', batch, headers);
    expect(first.status).toBe(503);
    const ids = first.body.data.map((i: { id?: string }) => i.id);
    expect(ids[0]).toMatch(/^em_/);
    expect(ids[1]).toBeUndefined();
    expect(first.body.data[1].error.code).toBe('validation_error');
    // Projections back and caught up: the retry's short wait (PROJECTION_WAIT_MS) is for its own write only.
    await svc.postline.runner.start();
    await svc.postline.runner.caughtUp();
    const answered = await org.test.post('/v1/emails/batch', batch, headers);
    expect(answered.status).toBe(200);
    expect(answered.body.data.map((i: { id?: string }) => i.id)).toEqual(ids);
    expect((await queuedIds()).length).toBe(before + 2);
  });

  it("answers a template's 503 with its id, and a retry creates no other", async () => {
    await svc.postline.runner.stop();
    const headers = { 'idempotency-key': 'lagging-template' };
    const template = { name: 'welcome', subject: 'Hi', text: 'Hello' };
    const first = await org.live.post('/v1/templates', template, headers);
    expect(first.status).toBe(503);
    expect(first.body.id).toMatch(/^tmpl_/);
    // Projections back and caught up: the retry's short wait (PROJECTION_WAIT_MS) is for its own write only.
    await svc.postline.runner.start();
    await svc.postline.runner.caughtUp();
    const answered = await org.live.post('/v1/templates', template, headers);
    expect(answered.status).toBe(201);
    expect(answered.body.id).toBe(first.body.id);
    const list = await org.live.get('/v1/templates');
    expect(list.body.data.map((t: { id: string }) => t.id)).toEqual([first.body.id]);
  });
});

describe('Idempotency-Key when PostgreSQL goes away in the middle of a request', () => {
  // Time stands still: a lease can never run out here, so a key that frees again was released.
  const frozen = new ManualClock('2026-03-01T00:00:00Z');
  const at = () => frozen.now();
  const LEASE_MS = 60_000;
  let admin: pg.Client;
  let name: string;
  let cleanup: () => Promise<void>;
  /** Two stores on one database, as two processes of the service, each with its Idempotency-Key claims. */
  let storeA: PostgresEventStore;
  let storeB: PostgresEventStore;
  let processA: IdempotencyKeys;
  let processB: IdempotencyKeys;
  let poolA: ReturnType<typeof connectPostgres>;

  beforeAll(async () => {
    const { url, drop } = await createTestDatabaseUrl();
    name = new URL(url).pathname.slice(1);
    admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    poolA = connectPostgres(url, TEST_POOL_SIZE);
    const poolB = connectPostgres(url, TEST_POOL_SIZE);
    storeA = await PostgresEventStore.create(poolA);
    storeB = await PostgresEventStore.create(poolB);
    processA = new IdempotencyKeys(storeA);
    processB = new IdempotencyKeys(storeB);
    cleanup = async () => {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      await admin.end();
      for (const s of [storeA, storeB]) await s.close();
      for (const p of [poolA, poolB]) await p.close();
      await drop();
    };
  });
  afterAll(() => cleanup?.());

  const allowConnections = (yes: boolean) => admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS ${yes}`);
  const terminateAll = () =>
    admin.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [name],
    );

  /** A request under `key` in process A during which the database goes away: it ends without an answer. */
  async function cutOff(key: string) {
    const error = await processA
      .run(
        auth,
        key,
        hashOf('h'),
        at,
        async () => {
          await allowConnections(false);
          await terminateAll();
          await poolA.query('SELECT 1'); // what the request does next fails: the database is away
          return { status: 200, body: {} };
        },
        { leaseMs: LEASE_MS, newIds: () => [`em_${key}`] },
      )
      .catch((e) => e);
    expect(isDatabaseUnavailable(error), String(error)).toBe(true);
  }

  /** The request under `key` in the process of `claims`, sent again until the database answers; every other answer is kept. */
  async function retry(claims: IdempotencyKeys, key: string, until: (answer: unknown) => boolean) {
    const answers: unknown[] = [];
    for (let i = 0; i < 400; i++) {
      const answer = await claims
        .run(auth, key, hashOf('h'), at, async (claim) => ({ status: 200, body: claim }), {
          leaseMs: LEASE_MS,
          newIds: () => ['em_other'],
        })
        .catch((e) => e);
      if (isDatabaseUnavailable(answer)) {
        await new Promise((r) => setTimeout(r, 50)); // the pool is still reconnecting
        continue;
      }
      answers.push(answer);
      if (until(answer)) return answers;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`never answered as expected: ${JSON.stringify(answers.slice(-3))}`);
  }

  it('frees the key as soon as the database is back: the retry runs at once, on the ids of the first attempt', async () => {
    await cutOff('cut-other');
    await allowConnections(true);
    await retry(processA, 'warm-up', () => true);
    await cutOff('cut-same');
    await allowConnections(true);
    // The next request in the same process is answered, not told the key is in flight.
    const same = await retry(processA, 'cut-same', () => true);
    expect(same).toEqual([{ status: 200, body: { ids: ['em_cut-same'], resumed: true } }]);
    // Another process is not held up by the lease either (time stands still): it runs once the release is in.
    const other = await retry(processB, 'cut-other', (a) => !(a instanceof AppError));
    expect(other.at(-1)).toEqual({ status: 200, body: { ids: ['em_cut-other'], resumed: true } });
    for (const a of other.slice(0, -1)) expect((a as AppError).code).toBe('idempotency_request_in_flight');
  }, 60_000);
});
