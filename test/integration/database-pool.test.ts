import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { connectPostgres } from '../../platform/db/database.ts';
import { ADMIN_URL, createTestDatabaseUrl } from '../support/databases.ts';
import { PATIENCE } from '../support/patience.ts';

/** The pool of connections behind `Database.query` (platform/db/database.ts). */
describe('the pool of connections', () => {
  it('keeps a connection whose statement failed, and drops one that broke', async () => {
    const { url, drop } = await createTestDatabaseUrl();
    const db = connectPostgres(url, 1);
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    const backend = async () =>
      (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    try {
      await db.query('CREATE TABLE t (id int PRIMARY KEY)');
      await db.query('INSERT INTO t VALUES (1)');
      const first = await backend();
      // A conflict (how the event store learns that another writer came first) and a mistake: the session goes on.
      await expect(db.query('INSERT INTO t VALUES (1)')).rejects.toMatchObject({ code: '23505' });
      await expect(db.query('SELECT nope FROM t')).rejects.toMatchObject({ code: '42703' });
      expect(await backend()).toBe(first);

      // The backend terminated while its statement runs: that statement fails, the next gets a new connection.
      const sleeping = db.query('SELECT pg_sleep(60)').catch((error) => error);
      await vi.waitFor(async () => {
        const { rows } = await admin.query(
          "SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND query LIKE 'SELECT pg_sleep%'",
          [first],
        );
        expect(rows).toHaveLength(1);
      }, PATIENCE);
      await admin.query('SELECT pg_terminate_backend($1)', [first]);
      expect(await sleeping).toMatchObject({ code: '57P01' });
      const second = await backend();
      expect(second).not.toBe(first);
      expect((await db.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 1 }]);
    } finally {
      await admin.end();
      await db.close();
      await drop();
    }
  });
});
