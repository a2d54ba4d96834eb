import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPostgres, type Database } from '../../platform/db/database.ts';
import { migrate } from '../../platform/db/migrations.ts';
import { checkpointMigrations } from '../../platform/eventstore/checkpoints.ts';
import { parkedEventsMigrations } from '../../platform/eventstore/parked-events.ts';
import { PostgresEventStore } from '../../platform/eventstore/postgres/store.ts';
import { createLogger } from '../../platform/logger.ts';
import { LogConsumer } from '../../processes/log-consumer.ts';
import { createTestDatabaseUrl, TEST_POOL_SIZE } from '../support/databases.ts';

const log = createLogger('silent');
const meta = { orgId: 'org_1', mode: 'test' as const, actor: 'test' };

let url: string;
let drop: () => Promise<void>;
const opened: Database[] = [];

/** One process's consumer named `tally`, recording every event it handles (no unique key: doubles would show). */
async function startProcess() {
  const db = connectPostgres(url, TEST_POOL_SIZE);
  opened.push(db);
  const store = await PostgresEventStore.create(db, { pollMs: 100 });
  await db.exec('CREATE TABLE IF NOT EXISTS tally (stream_id text, revision int)');
  await migrate(db, [...checkpointMigrations, ...parkedEventsMigrations]);
  const consumer = new LogConsumer({ name: 'tally', db, store, log }, async (tx, events) => {
    for (const e of events)
      await tx.query('INSERT INTO tally (stream_id, revision) VALUES ($1, $2)', [e.streamId, e.revision]);
  });
  return { db, store, consumer };
}

beforeAll(async () => {
  ({ url, drop } = await createTestDatabaseUrl());
});
afterAll(async () => {
  for (const db of opened) await db.close();
  await drop();
});

describe('log consumer', () => {
  it('handles each event once while two processes follow the log, stop and start again', async () => {
    const a = await startProcess();
    const b = await startProcess();
    const append = (stream: string, n: number) =>
      Promise.all(
        Array.from({ length: n }, () =>
          a.store.append(stream, [{ type: 'Tick', data: {}, metadata: meta }], { expectedRevision: 'any' }),
        ),
      );
    /** Until the consumer's checkpoint is the committed head (a positive signal, with a deadline). */
    const caughtUp = async (c: LogConsumer) => {
      const head = await a.store.headPosition({ committed: true });
      for (let i = 0; i < 500 && (await c.checkpoint()) < head; i++)
        await new Promise((r) => setTimeout(r, 10));
      expect(await c.checkpoint()).toBe(head);
    };

    a.consumer.start();
    b.consumer.start();
    await Promise.all(Array.from({ length: 10 }, (_, w) => append(`s-${w}`, 60)));
    await caughtUp(a.consumer);
    // B sleeps while A goes on; started again, it follows from where it last knew the checkpoint to be.
    await b.consumer.stop();
    await append('while-b-slept', 700);
    await caughtUp(a.consumer);
    b.consumer.start();
    await a.consumer.stop();
    await append('after-a-stopped', 50);
    await caughtUp(b.consumer);
    await b.consumer.stop();

    const { rows } = await a.db.query<{ n: number; doubles: number }>(
      `SELECT count(*)::int AS n,
         (SELECT count(*)::int FROM (SELECT 1 FROM tally GROUP BY stream_id, revision HAVING count(*) > 1) d) AS doubles
       FROM tally`,
    );
    expect(rows[0]).toEqual({ n: 600 + 700 + 50, doubles: 0 });
  });
});
