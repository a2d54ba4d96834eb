import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../platform/db/database.ts';
import { CHECKPOINT_CHANNEL } from '../../projections/projection.ts';
import { ProjectionWaiter } from '../../projections/waiter.ts';
import { ADMIN_URL, openTestDatabase } from '../support/databases.ts';

/**
 * LISTEN survives its connection: a terminated backend is replaced by itself, LISTENs again, and tells its
 * subscribers (they missed what was announced meanwhile). Events, not sleeps: each step waits for what the
 * listener reports, bounded by the test's time-out.
 */

let db: Database;
let url: string;
let dispose: () => Promise<void>;
let admin: pg.Client;
beforeAll(async () => {
  const opened = await openTestDatabase();
  ({ db, dispose } = opened);
  url = opened.url!;
  admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
});
afterAll(async () => {
  await admin?.end();
  await dispose?.();
});

/** Terminates every backend of the test database: the pool's and the LISTEN connection. */
async function terminateAll(): Promise<number> {
  const { rows } = await admin.query(
    'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = $1',
    [new URL(url).pathname.slice(1)],
  );
  return rows[0].n;
}

/** What a subscriber was told, in order; `until` waits for the `times`-th telling of `what`. */
function recorder() {
  const seen: string[] = [];
  const waiting: { what: string; times: number; resolve: () => void }[] = [];
  const count = (what: string) => seen.filter((s) => s === what).length;
  return {
    seen,
    record(what: string) {
      seen.push(what);
      for (const w of waiting.filter((w) => count(w.what) >= w.times)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve();
      }
    },
    until(what: string, times = 1): Promise<void> {
      if (count(what) >= times) return Promise.resolve();
      return new Promise((resolve) => waiting.push({ what, times, resolve }));
    },
  };
}

describe('LISTEN on PostgreSQL', () => {
  it('comes back by itself after its backend is terminated, and says so', async () => {
    const a = recorder();
    const unlisten = await db.listen('reconnect_a', (p) => a.record(`notify ${p}`), {
      onLost: () => a.record('lost'),
      onResume: () => a.record('resumed'),
    });
    expect(a.seen).toEqual(['resumed']); // in place when listen resolves
    await db.query(`SELECT pg_notify('reconnect_a', 'one')`);
    await a.until('notify one');

    expect(await terminateAll()).toBeGreaterThan(0);
    await a.until('lost');
    // The pool's statements work again at once (new connections); the listener reconnects with back-off.
    await a.until('resumed', 2);
    await db.query(`SELECT pg_notify('reconnect_a', 'two')`);
    await a.until('notify two');

    // A second channel on the same connection, in place when its listen resolves.
    const b = recorder();
    const unlistenB = await db.listen('reconnect_b', (p) => b.record(`notify ${p}`), {
      onResume: () => b.record('resumed'),
    });
    expect(b.seen).toEqual(['resumed']);
    await db.query(`SELECT pg_notify('reconnect_b', 'three')`);
    await b.until('notify three');
    expect(a.seen).not.toContain('notify three');
    await unlisten();
    await unlistenB();
  });

  it("has the waiter's caches answer nothing from memory while deaf, and empties them when it hears again", async () => {
    const waiter = new ProjectionWaiter(db, undefined, 1000);
    const changes = recorder();
    let n = 0;
    waiter.onChange('api_keys', () => changes.record(`change ${++n}`));
    await changes.until('change 1'); // LISTEN in place: whatever changed before is unknown
    expect(waiter.hearing).toBe(true);
    await db.query(
      `SELECT pg_notify('${CHECKPOINT_CHANNEL}', 'api_keys 00000000000000000001.00000000000000000001 changed')`,
    );
    await changes.until('change 2');

    // The probe's LISTEN is in place before the backends go: one still in flight would be deaf, never lost.
    let markLost!: () => void;
    const lost = new Promise<void>((resolve) => (markLost = resolve));
    const unlistenProbe = await db.listen('reconnect_probe', () => {}, { onLost: () => markLost() });
    await terminateAll();
    await lost;
    expect(waiter.hearing).toBe(false);
    await changes.until('change 3'); // heard again: every cache is emptied
    expect(waiter.hearing).toBe(true);
    await unlistenProbe();
    await waiter.close();
  });
});
