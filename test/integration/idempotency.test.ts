import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { openPGlite } from '../../platform/db/database.ts';
import { AppError } from '../../platform/errors.ts';
import { PostgresEventStore } from '../../platform/eventstore/postgres.ts';
import type { AuthContext } from '../../platform/http/auth-context.ts';
import { withIdempotency } from '../../platform/http/idempotency.ts';

const auth: AuthContext = {
  orgId: 'org_1',
  plan: 'pro',
  mode: 'live',
  keyId: 'key_1',
  permission: 'full_access',
  domainId: null,
};
let store: PostgresEventStore;
let close: () => Promise<void>;
const clock = new ManualClock('2026-03-01T00:00:00Z');
const now = () => clock.now();

beforeAll(async () => {
  const db = await openPGlite();
  store = await PostgresEventStore.create(db);
  close = async () => {
    await store.close();
    await db.close();
  };
});
afterAll(() => close());

describe('Idempotency-Key', () => {
  it('answers 409 to a duplicate that arrives while the first is in flight', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let runs = 0;
    const first = withIdempotency(store, auth, 'k-flight', 'h1', now, async () => {
      runs++;
      await gate;
      return { status: 200, body: { id: 'em_1' } };
    });
    await new Promise((r) => setTimeout(r, 50));
    const second = await withIdempotency(store, auth, 'k-flight', 'h1', now, async () => {
      runs++;
      return { status: 200, body: { id: 'em_2' } };
    }).catch((e) => e);
    expect(second).toBeInstanceOf(AppError);
    expect(second.code).toBe('idempotency_request_in_flight');
    release();
    expect(await first).toEqual({ status: 200, body: { id: 'em_1' } });
    expect(runs).toBe(1);
  });

  it('lets exactly one of two simultaneous duplicates act', async () => {
    let runs = 0;
    const run = async () => {
      runs++;
      await new Promise((r) => setTimeout(r, 30));
      return { status: 200, body: { n: runs } };
    };
    const results = await Promise.allSettled([
      withIdempotency(store, auth, 'k-race', 'h', now, run),
      withIdempotency(store, auth, 'k-race', 'h', now, run),
    ]);
    expect(runs).toBe(1);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  });

  it('forgets a key after 24 hours', async () => {
    let runs = 0;
    const run = async () => ({ status: 200, body: { n: ++runs } });
    await withIdempotency(store, auth, 'k-window', 'h', now, run);
    clock.advance(23 * 3600_000);
    expect((await withIdempotency(store, auth, 'k-window', 'h', now, run)).replayed).toBe(true);
    clock.advance(2 * 3600_000);
    const fresh = await withIdempotency(store, auth, 'k-window', 'h-other-body', now, run);
    expect(fresh.replayed).toBeUndefined();
    expect(runs).toBe(2);
  });

  it('frees the key when the request fails on the server side', async () => {
    await expect(
      withIdempotency(store, auth, 'k-fail', 'h', now, async () => {
        throw new Error('database down');
      }),
    ).rejects.toThrow('database down');
    const retry = await withIdempotency(store, auth, 'k-fail', 'h', now, async () => ({
      status: 200,
      body: { ok: true },
    }));
    expect(retry).toEqual({ status: 200, body: { ok: true } });
  });
});
