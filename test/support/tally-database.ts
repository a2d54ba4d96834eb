import { afterAll, beforeAll } from 'vitest';
import { connectPostgres, type Database, type Queryable } from '../../platform/db/database.ts';
import { migrate } from '../../platform/db/migrations.ts';
import { checkpointMigrations } from '../../platform/eventstore/checkpoints.ts';
import { parkedEventsMigrations } from '../../platform/eventstore/parked-events.ts';
import { PostgresEventStore } from '../../platform/eventstore/postgres/store.ts';
import type { StoredEvent } from '../../platform/eventstore/types.ts';
import { createTestDatabaseUrl, TEST_POOL_SIZE } from './databases.ts';

/** Records an application of an event in `tally`, a table without a key: an event applied twice shows. */
export const recordTally = (tx: Queryable, event: StoredEvent) =>
  tx.query('INSERT INTO tally (stream_id, revision) VALUES ($1, $2)', [event.streamId, event.revision]);

/** How many rows `tally` holds, and how many events it holds more than once. */
export async function countTally(db: Queryable): Promise<{ n: number; doubles: number }> {
  const { rows } = await db.query<{ n: number; doubles: number }>(
    `SELECT count(*)::int AS n,
       (SELECT count(*)::int FROM (SELECT 1 FROM tally GROUP BY stream_id, revision HAVING count(*) > 1) d) AS doubles
     FROM tally`,
  );
  return rows[0];
}

/**
 * One PostgreSQL database for a test file, and `open()` to connect a "process" to it: a pool and an event store
 * of its own (polling every 100 ms), with the checkpoint tables and `tally`. Closed and dropped after the file.
 */
export function useTallyDatabase(): { open: () => Promise<{ db: Database; store: PostgresEventStore }> } {
  let url: string;
  let drop: () => Promise<void>;
  const opened: Database[] = [];
  beforeAll(async () => {
    ({ url, drop } = await createTestDatabaseUrl());
  });
  afterAll(async () => {
    for (const db of opened) await db.close();
    await drop();
  });
  return {
    async open() {
      const db = connectPostgres(url, TEST_POOL_SIZE);
      opened.push(db);
      const store = await PostgresEventStore.create(db, { pollMs: 100 });
      await db.exec('CREATE TABLE IF NOT EXISTS tally (stream_id text, revision int)');
      await migrate(db, [...checkpointMigrations, ...parkedEventsMigrations]);
      return { db, store };
    },
  };
}
