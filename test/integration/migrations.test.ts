import { describe, expect, it } from 'vitest';
import { migrations } from '../../bin/migrations.ts';
import { type Migration, migrate } from '../../platform/db/migrations.ts';
import { eventStoreMigrations } from '../../platform/eventstore/postgres/schema.ts';
import { openTestDatabase, TEST_POOL_SIZE } from '../support/databases.ts';

const applied = async (db: Awaited<ReturnType<typeof openTestDatabase>>['db']) =>
  (await db.query<{ id: string }>('SELECT id FROM schema_migrations ORDER BY applied_at, id')).rows.map(
    (r) => r.id,
  );

describe('migrations', () => {
  it('apply every schema once, in order, and a second run changes nothing', async () => {
    const { db, dispose } = await openTestDatabase();
    try {
      const all = [...eventStoreMigrations, ...migrations];
      await migrate(db, all);
      expect(await applied(db)).toEqual(all.map((m) => m.id));
      await migrate(db, all);
      expect(await applied(db)).toEqual(all.map((m) => m.id));
    } finally {
      await dispose();
    }
  });

  it('commit each migration on its own: a failing one leaves the ones before it applied', async () => {
    const { db, dispose } = await openTestDatabase();
    try {
      const steps: Migration[] = [
        { id: 'a-001', sql: 'CREATE TABLE a (x int)' },
        { id: 'b-001', sql: 'CREATE TABLE b (x int);\nINSERT INTO b VALUES (1);\nSELECT 1/0' },
      ];
      await expect(migrate(db, steps)).rejects.toThrow(/division by zero/);
      expect(await applied(db)).toEqual(['a-001']);
      expect((await db.query(`SELECT to_regclass('b') AS t`)).rows[0].t).toBeNull();
    } finally {
      await dispose();
    }
  });
});

it('are applied once when several processes start at once (PostgreSQL)', async () => {
  const { db, url, dispose } = await openTestDatabase();
  const { connectPostgres } = await import('../../platform/db/database.ts');
  const others = [connectPostgres(url!, TEST_POOL_SIZE), connectPostgres(url!, TEST_POOL_SIZE)];
  try {
    const counted: Migration[] = [
      { id: 'c-001', sql: 'CREATE TABLE c (x int)' },
      { id: 'c-002', sql: 'INSERT INTO c VALUES (1)' },
    ];
    await Promise.all([db, ...others].map((d) => migrate(d, counted)));
    expect((await db.query('SELECT count(*)::int AS n FROM c')).rows[0].n).toBe(1);
  } finally {
    await Promise.all(others.map((d) => d.close()));
    await dispose();
  }
});
