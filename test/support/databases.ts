import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { connectPostgres, type Database } from '../../platform/db/database.ts';

export const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A fresh, empty PostgreSQL database of its own for one test file; drop it with the returned function. */
export async function createTestDatabaseUrl(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `postline_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: ADMIN_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/**
 * Connections per test pool and per service a test starts: test files run in parallel against one server whose
 * `max_connections` (100 by default) they share.
 */
export const TEST_POOL_SIZE = 4;

/** Opens a throwaway PostgreSQL database of its own. */
export async function openTestDatabase(): Promise<{
  db: Database;
  url: string;
  dispose: () => Promise<void>;
}> {
  const { url, drop } = await createTestDatabaseUrl();
  const db = connectPostgres(url, TEST_POOL_SIZE);
  return {
    db,
    url,
    dispose: async () => {
      await db.close();
      await drop();
    },
  };
}
