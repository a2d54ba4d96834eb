import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/database.ts';
import { DueQueue } from '../../platform/due/due-queue.ts';
import type { DueTable } from '../../platform/due/due-sql.ts';
import { createLogger } from '../../platform/logger.ts';
import { openTestDatabase } from '../support/databases.ts';

type Row = { owner: string; n: number; note: string };

const TABLE: DueTable = {
  table: 'due_things',
  key: { owner: 'text', n: 'integer' },
  dueAt: 'due_at',
  columns: ['note'],
  leaseMs: 60_000,
};

describe('DueQueue', () => {
  let db: Database;
  let dispose: () => Promise<void>;
  const clock = new ManualClock('2026-06-01T00:00:00Z');
  const logged: string[] = [];
  const log = createLogger('error', { write: (line: string) => void logged.push(line) });
  const queue = () => new DueQueue<Row>({ db, clock, log }, TABLE);
  const at = (ms: number) => new Date(clock.now().getTime() + ms).toISOString();
  const rows = async () =>
    (
      await db.query<{ owner: string; n: number; due_at: Date; claimed: boolean }>(
        'SELECT owner, n, due_at, claimed_until IS NOT NULL AS claimed FROM due_things ORDER BY owner, n',
      )
    ).rows;

  beforeAll(async () => {
    ({ db, dispose } = await openTestDatabase());
    // `tries` is named by no row: adding rows leaves it its default (NOT NULL would refuse a null).
    await db.query(`CREATE TABLE due_things (
      owner text NOT NULL, n integer NOT NULL, note text NOT NULL, due_at timestamptz NOT NULL,
      tries integer NOT NULL DEFAULT 0, claimed_until timestamptz, PRIMARY KEY (owner, n))`);
  });
  afterAll(() => dispose?.());
  beforeEach(async () => {
    await db.query('DELETE FROM due_things');
    logged.length = 0;
  });

  it('claims due rows oldest first, once while the lease holds, again once it has run out', async () => {
    await queue().add(db, [
      { owner: 'a', n: 2, note: 'second', due_at: at(-1000) },
      { owner: 'a', n: 1, note: 'first', due_at: at(-2000) },
      { owner: 'b', n: 1, note: 'later', due_at: at(5000) },
    ]);
    // A row already there is left alone.
    await queue().add(db, [{ owner: 'a', n: 1, note: 'again', due_at: at(0) }]);
    const q = queue();
    expect(await q.claim(10)).toEqual([
      { owner: 'a', n: 1, note: 'first' },
      { owner: 'a', n: 2, note: 'second' },
    ]);
    expect(await q.claim(10)).toEqual([]);
    // Another process while the claim holds: nothing; after the lease (a crashed claimer): the rows again.
    expect(await queue().claim(10)).toEqual([]);
    clock.advance(TABLE.leaseMs + 1);
    expect((await queue().claim(1)).map((r) => r.note)).toEqual(['first']);
  });

  it('finishes in batches: done rows removed, others due again unclaimed', async () => {
    await queue().add(
      db,
      Array.from({ length: 120 }, (_, i) => ({ owner: 'c', n: i, note: `${i}`, due_at: at(-1) })),
    );
    const q = queue();
    const claimed = await q.claim(200);
    expect(claimed).toHaveLength(120);
    for (const row of claimed) q.finish(row, row.n === 7 ? at(60_000) : null);
    await q.flush();
    expect(await rows()).toEqual([{ owner: 'c', n: 7, due_at: new Date(at(60_000)), claimed: false }]);
  });

  it('adds the rows a finished row led to, with its finish', async () => {
    await queue().add(db, [{ owner: 'f', n: 1, note: '', due_at: at(-1) }]);
    const q = queue();
    const [row] = await q.claim(10);
    q.finish(row, null, [
      { owner: 'f', n: 2, note: 'next', due_at: at(1000) },
      { owner: 'f', n: 3, note: 'after', due_at: at(2000) },
    ]);
    await q.flush();
    expect(await rows()).toEqual([
      { owner: 'f', n: 2, due_at: new Date(at(1000)), claimed: false },
      { owner: 'f', n: 3, due_at: new Date(at(2000)), claimed: false },
    ]);
  });

  it('drains everything due with several processes at once, each row worked once', async () => {
    await queue().add(
      db,
      Array.from({ length: 250 }, (_, i) => ({ owner: `o${i % 7}`, n: i, note: '', due_at: at(-1) })),
    );
    const worked: string[] = [];
    const drains = [1, 2, 3].map(() => {
      const q = queue();
      return q.drain({ batch: 20, concurrency: 4 }, (claimed) =>
        claimed.map((row) => async () => {
          worked.push(`${row.owner}/${row.n}`);
          await new Promise((r) => setImmediate(r));
          q.finish(row, null);
          return 1;
        }),
      );
    });
    const counts = await Promise.all(drains);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(250);
    expect(new Set(worked).size).toBe(250);
    expect(worked).toHaveLength(250);
    expect(await rows()).toEqual([]);
  });

  it('applies changes in their order: add leaves a row alone, set moves it (unclaim frees it), remove deletes it', async () => {
    await queue().add(db, [
      { owner: 'd', n: 1, note: 'kept', due_at: at(-1000) },
      { owner: 'd', n: 2, note: 'claimed', due_at: at(-1000) },
    ]);
    const q = queue();
    expect((await q.claim(1)).map((r) => r.note)).toEqual(['kept']);
    await q.apply(db, [
      { add: { owner: 'd', n: 1, note: 'ignored', due_at: at(9000) } },
      { add: { owner: 'd', n: 3, note: 'new', due_at: at(1000) } },
      { set: { owner: 'd', n: 1, note: 'kept', due_at: at(2000) } },
      // Two changes of one key in a run: the last counts.
      { set: { owner: 'd', n: 3, note: 'new', due_at: at(3000) } },
      { set: { owner: 'd', n: 3, note: 'new', due_at: at(4000) } },
      { remove: { owner: 'd', n: 2 } },
      { set: { owner: 'd', n: 4, note: 'set makes it', due_at: at(5000) }, unclaim: true },
    ]);
    expect(await rows()).toEqual([
      // Moved, and still claimed: only `unclaim` frees a claim.
      { owner: 'd', n: 1, due_at: new Date(at(2000)), claimed: true },
      { owner: 'd', n: 3, due_at: new Date(at(4000)), claimed: false },
      { owner: 'd', n: 4, due_at: new Date(at(5000)), claimed: false },
    ]);
    await q.apply(db, [{ set: { owner: 'd', n: 1, note: 'kept', due_at: at(-1) }, unclaim: true }]);
    expect((await queue().claim(10)).map((r) => r.note)).toEqual(['kept']);
    const { rows: notes } = await db.query<{ note: string }>(
      "SELECT note FROM due_things WHERE owner = 'd' ORDER BY n",
    );
    expect(notes.map((r) => r.note)).toEqual(['kept', 'new', 'set makes it']);
  });

  it('removes every row of a key whose later columns a removal leaves out, claimed or not', async () => {
    await queue().add(db, [
      { owner: 'r', n: 1, note: 'claimed', due_at: at(-1000) },
      { owner: 'r', n: 2, note: 'later', due_at: at(60_000) },
      { owner: 'rr', n: 1, note: 'another owner', due_at: at(60_000) },
    ]);
    const q = queue();
    expect((await q.claim(1)).map((r) => r.note)).toEqual(['claimed']);
    await q.apply(db, [{ remove: { owner: 'r' } }]);
    const { rows: left } = await db.query("SELECT owner, n FROM due_things WHERE owner LIKE 'r%'");
    expect(left).toEqual([{ owner: 'rr', n: 1 }]);
  });

  const claimedUntil = async (owner: string, n: number) =>
    (
      await db.query<{ claimed_until: Date | null }>(
        'SELECT claimed_until FROM due_things WHERE owner = $1 AND n = $2',
        [owner, n],
      )
    ).rows[0]?.claimed_until;

  it('gives the rows of a task that throws back at once, due again after a back-off that doubles; the other tasks go on', async () => {
    await queue().add(db, [
      { owner: 'd', n: 1, note: 'fails', due_at: at(-2) },
      { owner: 'd', n: 2, note: 'works', due_at: at(-1) },
    ]);
    const q = queue();
    let failures = 0;
    const drain = () =>
      q.drain({ batch: 10, concurrency: 1 }, (claimed) =>
        claimed.map((row) => async () => {
          if (row.note === 'fails' && failures++ < 2) throw new Error('no luck');
          q.finish(row, null);
          return 1;
        }),
      );
    expect(await drain()).toBe(1);
    expect(logged.join('')).toContain('no luck');
    // Not left to its lease: free again a second later, for this process or another.
    expect(await claimedUntil('d', 1)).toEqual(new Date(at(1000)));
    expect(await queue().claim(10)).toEqual([]);
    clock.advance(1001);
    expect(await drain()).toBe(0);
    // Failed twice in a row: two seconds.
    expect(await claimedUntil('d', 1)).toEqual(new Date(at(2000)));
    clock.advance(2001);
    expect(await drain()).toBe(1);
    expect(await rows()).toEqual([]);
  });

  it('renews the leases it holds while their work goes on, and no other claim takes them', async () => {
    await queue().add(db, [{ owner: 'e', n: 1, note: 'long work', due_at: at(-1) }]);
    const q = queue();
    expect(await q.claim(10)).toHaveLength(1);
    clock.advance(40_000);
    await q.renew();
    expect(await claimedUntil('e', 1)).toEqual(new Date(at(TABLE.leaseMs)));
    // Past the lease the claim first had: still held.
    clock.advance(30_000);
    expect(await queue().claim(10)).toEqual([]);
    // Not renewed any more (the process died): another process takes it once the lease runs out.
    clock.advance(TABLE.leaseMs);
    expect(await queue().claim(10)).toHaveLength(1);
  });

  it('renews on a heartbeat of its own, every heartbeatMs', async () => {
    await queue().add(db, [{ owner: 'f', n: 1, note: 'long work', due_at: at(-1) }]);
    const q = new DueQueue<Row>({ db, clock, log, heartbeatMs: 20 }, TABLE);
    const [row] = await q.claim(10);
    clock.advance(40_000);
    const renewedUntil = new Date(at(TABLE.leaseMs));
    await expect.poll(async () => (await claimedUntil('f', 1))?.getTime()).toBe(renewedUntil.getTime());
    clock.advance(30_000);
    expect(await queue().claim(10)).toEqual([]);
    q.finish(row, at(60_000));
    await q.flush();
    expect(await claimedUntil('f', 1)).toBeNull();
  });

  it('leaves alone a row another process claimed once its lease had run out, and hands out no row twice', async () => {
    await queue().add(db, [
      { owner: 'g', n: 1, note: 'lost', due_at: at(-2) },
      { owner: 'g', n: 2, note: 'kept', due_at: at(-1) },
    ]);
    const first = queue();
    const [lost, kept] = await first.claim(10);
    // The heartbeat failed (the database away) and the lease ran out: another process claims one row...
    clock.advance(TABLE.leaseMs + 1);
    const second = queue();
    expect(await second.claim(1)).toEqual([lost]);
    const secondsLease = await claimedUntil('g', 1);
    // ...and this process's renewal and give-back leave that claim alone.
    await first.renew();
    await first.giveBack([lost]);
    expect(await claimedUntil('g', 1)).toEqual(secondsLease);
    second.finish(lost, null);
    await second.flush();
    // The other row, still worked here, is claimed again by this process's next claim but not handed out twice.
    clock.advance(TABLE.leaseMs + 1);
    expect(await first.claim(10)).toEqual([]);
    expect(await second.claim(10)).toEqual([]);
    first.finish(kept, null);
    await first.flush();
    expect(await rows()).toEqual([]);
  });

  it('holds a row finished while its drain works on others, its lease renewed, until its finish is written', async () => {
    await queue().add(db, [
      { owner: 'h', n: 1, note: 'quick', due_at: at(-2) },
      { owner: 'h', n: 2, note: 'slow', due_at: at(-1) },
    ]);
    const q = queue();
    const worked: string[] = [];
    const [slowStarted, release] = [Promise.withResolvers<void>(), Promise.withResolvers<void>()];
    const drained = q.drain({ batch: 1, concurrency: 1 }, (claimed) =>
      claimed.map((row) => async () => {
        worked.push(row.note);
        if (row.note === 'slow') {
          slowStarted.resolve();
          await release.promise;
        }
        q.finish(row, null);
        return 1;
      }),
    );
    await slowStarted.promise;
    expect(worked).toEqual(['quick', 'slow']);
    // The quick row's finish waits for the batch: the heartbeat renews its lease as it does the slow row's...
    clock.advance(40_000);
    await q.renew();
    expect(await claimedUntil('h', 1)).toEqual(new Date(at(TABLE.leaseMs)));
    // ...so past the lease its claim had, no other process takes it and works it again.
    clock.advance(30_000);
    expect(await queue().claim(10)).toEqual([]);
    release.resolve();
    expect(await drained).toBe(2);
    expect(worked).toEqual(['quick', 'slow']);
    expect(await rows()).toEqual([]);
  });

  it("writes no finish of a row another process claimed once this one's lease had run out", async () => {
    await queue().add(db, [
      { owner: 'i', n: 1, note: 'done here', due_at: at(-2) },
      { owner: 'i', n: 2, note: 'later here', due_at: at(-1) },
    ]);
    const first = queue();
    const [done, later] = await first.claim(10);
    // The heartbeat failed (the database away) and the lease ran out: another process claims both rows.
    clock.advance(TABLE.leaseMs + 1);
    const second = queue();
    expect(await second.claim(10)).toEqual([done, later]);
    const leases = [await claimedUntil('i', 1), await claimedUntil('i', 2)];
    // The first process's finishes come late: they leave the second's claims as they are.
    first.finish(done, null);
    first.finish(later, at(60_000));
    await first.flush();
    expect([await claimedUntil('i', 1), await claimedUntil('i', 2)]).toEqual(leases);
    // The second process's own finishes are written, and its heartbeat still holds what it has not finished.
    second.finish(done, null);
    await second.flush();
    await second.renew();
    expect(await rows()).toEqual([
      { owner: 'i', n: 2, due_at: new Date(at(-TABLE.leaseMs - 2)), claimed: true },
    ]);
  });

  it('writes a finish after a renewal under way, which moves the lease end the finish names the row by', async () => {
    await queue().add(db, [{ owner: 'j', n: 1, note: '', due_at: at(-1) }]);
    // The renewal commits at once, but this process learns so only once `answer` resolves.
    const answer = Promise.withResolvers<void>();
    const slowAnswers: Database = {
      ...db,
      query: async (sql, params) => {
        const result = await db.query(sql, params);
        if (sql.includes('RETURNING') && sql.trimStart().startsWith('UPDATE')) await answer.promise;
        return result;
      },
    };
    const q = new DueQueue<Row>({ db: slowAnswers, clock, log }, TABLE);
    const [row] = await q.claim(10);
    clock.advance(20_000);
    const renewed = q.renew();
    await vi.waitFor(async () => expect(await claimedUntil('j', 1)).toEqual(new Date(at(TABLE.leaseMs))), {
      timeout: 10_000,
    });
    q.finish(row, null);
    const flushed = q.flush();
    answer.resolve();
    await Promise.all([renewed, flushed]);
    expect(await rows()).toEqual([]);
  });

  it('takes only plain SQL names', () => {
    expect(() => new DueQueue({ db, clock, log }, { ...TABLE, table: 'x; DROP TABLE y' })).toThrow(
      /not a plain SQL name/,
    );
  });
});
