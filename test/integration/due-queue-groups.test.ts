import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import type { Database } from '../../platform/db/database.ts';
import { DueQueue } from '../../platform/due/due-queue.ts';
import type { DueTable } from '../../platform/due/due-sql.ts';
import { queueDepth } from '../../platform/due/due-sql.ts';
import { createLogger } from '../../platform/logger.ts';
import { openTestDatabase } from '../support/databases.ts';

type Row = { owner: string; n: number; note: string; token: string };

const TABLE: DueTable = {
  table: 'due_grouped',
  key: { owner: 'text', n: 'integer' },
  dueAt: 'due_at',
  columns: ['note'],
  where: `$row.state = 'open'`,
  token: 'token',
  leaseMs: 60_000,
  groups: { column: 'owner', perGroup: 2, of: { table: 'due_owners', key: 'owner', where: '$row.active' } },
};

describe('DueQueue with groups, a token and a condition', () => {
  let db: Database;
  let dispose: () => Promise<void>;
  const clock = new ManualClock('2026-06-01T00:00:00Z');
  const log = createLogger('error', { write: () => {} });
  const queue = () => new DueQueue<Row>({ db, clock, log }, TABLE);
  const at = (ms: number) => new Date(clock.now().getTime() + ms).toISOString();
  const add = (owner: string, n: number, dueIn = -1000, state = 'open') =>
    db.query('INSERT INTO due_grouped (owner, n, note, due_at, state) VALUES ($1, $2, $3, $4, $5)', [
      owner,
      n,
      `${owner}${n}`,
      at(dueIn - n),
      state,
    ]);

  beforeAll(async () => {
    ({ db, dispose } = await openTestDatabase());
    await db.query(`CREATE TABLE due_owners (owner text PRIMARY KEY, active boolean NOT NULL)`);
    await db.query(`CREATE TABLE due_grouped (
      owner text NOT NULL, n integer NOT NULL, note text NOT NULL, due_at timestamptz NOT NULL,
      state text NOT NULL, token text, claimed_until timestamptz, PRIMARY KEY (owner, n))`);
  });
  afterAll(() => dispose?.());
  beforeEach(async () => {
    await db.query('DELETE FROM due_grouped');
    await db.query('DELETE FROM due_owners');
    await db.query(`INSERT INTO due_owners VALUES ('a', true), ('b', true), ('off', false)`);
  });

  it('claims at most the cap of a group, less what this process holds of it, of active groups, rows that meet the condition', async () => {
    for (const n of [1, 2, 3]) await add('a', n);
    await add('b', 1);
    await add('b', 2, -1000, 'closed');
    await add('off', 1);
    const q = queue();
    const first = await q.claim(10);
    expect(first.map((r) => r.note).sort()).toEqual(['a2', 'a3', 'b1']);
    expect(await q.claim(10)).toEqual([]);
    // One of `a` settled: room for one more of it.
    expect(q.settled(first.find((r) => r.note === 'a3')!)).toBeUndefined();
    await db.query(`UPDATE due_grouped SET state = 'done', claimed_until = NULL WHERE note = 'a3'`);
    expect((await q.claim(10)).map((r) => r.note)).toEqual(['a1']);
    // Another process holds none: the cap alone limits it, and the rows are leased.
    expect(await queue().claim(10)).toEqual([]);
    expect(await queueDepth(db, TABLE, clock.now())).toBe(4);
  });

  it("takes the groups in turn: a group's new row comes before another's old backlog", async () => {
    // `a`: a backlog due long ago, more than a claim takes; `b`: one row due just now.
    for (let n = 1; n <= 4; n++) await add('a', n, -3_600_000);
    await add('b', 1, 0);
    const q = new DueQueue<Row>({ db, clock, log }, { ...TABLE, groups: { ...TABLE.groups!, perGroup: 3 } });
    // Each group's oldest before any group's second; then by age within a turn.
    expect((await q.claim(2)).map((r) => r.note)).toEqual(['a4', 'b1']);
    expect((await q.claim(2)).map((r) => r.note)).toEqual(['a3', 'a2']);
  });

  it('at a group cap, claims again once a fifth of its tasks have ended rather than once per task, and drains every row', async () => {
    const ROWS = 60;
    for (let n = 1; n <= ROWS; n++) await add('a', n);
    let claims = 0;
    const counted: Database = {
      ...db,
      query: (sql, params) => {
        if (sql.trimStart().startsWith('WITH candidates')) claims++;
        return db.query(sql, params);
      },
    };
    const q = new DueQueue<Row>(
      { db: counted, clock, log },
      { ...TABLE, groups: { ...TABLE.groups!, perGroup: 20 } },
    );
    // Tasks end one at a time, 25 ms apart, in the order they were claimed: each end leaves room for one row.
    const start = performance.now();
    let claimed = 0;
    const done = await q.drain({ batch: 40, concurrency: 20 }, (rows) =>
      rows.map((row) => {
        const endAt = start + ++claimed * 25;
        return async () => {
          await new Promise((r) => setTimeout(r, endAt - performance.now()));
          q.finish(row, null);
          return 1;
        };
      }),
    );
    expect(done).toBe(ROWS);
    // A claim per task that ends would make 40 at least after the first 20 rows; once per 4 (a fifth of 20): 12.
    expect(claims).toBeLessThanOrEqual(20);
    expect((await db.query('SELECT count(*)::int AS n FROM due_grouped')).rows[0].n).toBe(0);
  });

  it('at its caps, a drain claims again on a wake after changes applied here, not on one after none', async () => {
    await add('a', 1);
    await add('a', 2);
    let claims = 0;
    const counted: Database = {
      ...db,
      query: (sql, params) => {
        if (sql.trimStart().startsWith('WITH candidates')) claims++;
        return db.query(sql, params);
      },
    };
    const q = new DueQueue<Row>(
      { db: counted, clock, log },
      { ...TABLE, groups: { ...TABLE.groups!, perGroup: 1 } },
    );
    const release = Promise.withResolvers<void>();
    const started: string[] = [];
    const drained = q.drain({ batch: 10, concurrency: 2 }, (rows) =>
      rows.map((row) => async () => {
        started.push(row.note);
        if (row.owner === 'a') await release.promise;
        q.finish(row, null);
        return 1;
      }),
    );
    // a2 (the older) held, a1 over the cap: the drain waits, its second claim having found nothing.
    await vi.waitFor(() => expect(claims).toBe(2));
    await add('b', 1);
    q.wake({ ifApplied: true });
    await new Promise((r) => setImmediate(r));
    expect(claims).toBe(2);
    await q.apply(db, [{ add: { owner: 'b', n: 2, note: 'b2', due_at: at(-1000), state: 'open' } }]);
    q.wake({ ifApplied: true });
    await vi.waitFor(() => expect(started).toEqual(['a2', 'b1', 'b2']));
    release.resolve();
    expect(await drained).toBe(4);
    expect(started).toEqual(['a2', 'b1', 'b2', 'a1']);
  });

  it('marks each claim with a token of its own; a row made due again while held is claimed again and handed back when settled', async () => {
    await add('a', 1);
    const q = queue();
    const [row] = await q.claim(10);
    expect(row.token).toEqual(expect.any(String));
    // Reset while its work goes on: due at once, its claim gone.
    await db.query('UPDATE due_grouped SET claimed_until = NULL, token = NULL');
    expect(await q.claim(10)).toEqual([]);
    const again = q.settled(row);
    expect(again).toMatchObject({ owner: 'a', n: 1 });
    expect(again!.token).not.toBe(row.token);
    const { rows } = await db.query<{ token: string }>('SELECT token FROM due_grouped');
    expect(rows[0].token).toBe(again!.token);
    expect(q.settled(again!)).toBeUndefined();
  });
});
