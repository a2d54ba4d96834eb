import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../platform/db/database.ts';
import { openTestDatabase } from '../support/databases.ts';

// A transaction merges BEGIN into its first statement when that has no parameters, and `atCommit` statements
// into COMMIT: both must keep all-or-nothing.
describe('transactions with merged round trips', () => {
  let db: Database;
  let dispose: () => Promise<void>;
  beforeAll(async () => {
    ({ db, dispose } = await openTestDatabase());
    await db.exec('CREATE TABLE t (k text PRIMARY KEY, v int NOT NULL)');
  });
  afterAll(() => dispose());
  const rows = async () => (await db.query('SELECT k, v FROM t ORDER BY k')).rows;

  it('commits a first statement without parameters, the others and the atCommit ones together', async () => {
    const result = await db.transaction(async (tx) => {
      const first = await tx.query(`INSERT INTO t VALUES ('a', 1) RETURNING v`);
      await tx.query('INSERT INTO t VALUES ($1, $2)', ['b', 2]);
      tx.atCommit(`UPDATE t SET v = v + 10 WHERE k = 'a'`);
      return first.rows[0].v;
    });
    expect(result).toBe(1);
    expect(await rows()).toEqual([
      { k: 'a', v: 11 },
      { k: 'b', v: 2 },
    ]);
  });

  it('rolls back a first statement merged with BEGIN when a later one fails', async () => {
    await expect(
      db.transaction(async (tx) => {
        await tx.query(`INSERT INTO t VALUES ('c', 3)`);
        await tx.query('INSERT INTO t VALUES ($1, $2)', ['a', 0]); // duplicate key
      }),
    ).rejects.toThrow(/duplicate key/);
    expect((await rows()).map((r) => r.k)).toEqual(['a', 'b']);
  });

  it('rolls everything back when an atCommit statement fails', async () => {
    await expect(
      db.transaction(async (tx) => {
        await tx.query('INSERT INTO t VALUES ($1, $2)', ['d', 4]);
        tx.atCommit(`UPDATE t SET v = NULL WHERE k = 'd'`); // NOT NULL violation
      }),
    ).rejects.toThrow(/null value/);
    expect((await rows()).map((r) => r.k)).toEqual(['a', 'b']);
    // The connection is usable afterwards: nothing was left open on it.
    expect(
      await db.transaction(async (tx) => (await tx.query('SELECT count(*)::int AS n FROM t')).rows[0].n),
    ).toBe(2);
  });

  it('runs atCommit statements of a transaction that made no query of its own', async () => {
    await db.transaction(async (tx) => tx.atCommit(`INSERT INTO t VALUES ('e', 5)`));
    expect((await rows()).map((r) => r.k)).toEqual(['a', 'b', 'e']);
  });
});
