import { describe, expect, it } from 'vitest';
import type { Database } from '../../platform/db/database.ts';
import type { PostgresEventStore } from '../../platform/eventstore/postgres/store.ts';
import { createLogger } from '../../platform/logger.ts';
import { LogConsumer } from '../../processes/log-consumer.ts';
import { countTally, recordTally, useTallyDatabase } from '../support/tally-database.ts';

const log = createLogger('silent');
const meta = { orgId: 'org_1', mode: 'test' as const, actor: 'test' };

const { open } = useTallyDatabase();

/** One process's consumer named `tally`, recording every event it handles. */
async function startProcess(): Promise<{ db: Database; store: PostgresEventStore; consumer: LogConsumer }> {
  const { db, store } = await open();
  const consumer = new LogConsumer({ name: 'tally', db, store, log }, async (tx, events) => {
    for (const e of events) await recordTally(tx, e);
  });
  return { db, store, consumer };
}

describe('log consumer', () => {
  it('handles each event once while two processes follow the log, stop and start again', async () => {
    const a = await startProcess();
    const b = await startProcess();
    /** `n` events at once, each the first of a stream of its own (so that none waits for another). */
    const append = (prefix: string, n: number) =>
      Promise.all(
        Array.from({ length: n }, (_, i) =>
          a.store.append(`${prefix}-${i}`, [{ type: 'Tick', data: {}, metadata: meta }], {
            expectedRevision: 'no_stream',
          }),
        ),
      );
    /** Until the consumer's checkpoint is the committed head (a positive signal). */
    const caughtUp = async (c: LogConsumer) => {
      const head = await a.store.headPosition({ committed: true });
      await expect.poll(() => c.checkpoint()).toBe(head);
    };

    a.consumer.start();
    b.consumer.start();
    await append('both-running', 600);
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

    expect(await countTally(a.db)).toEqual({ n: 600 + 700 + 50, doubles: 0 });
  });

  it('skips batches without an event it acts on: no transaction, no wake-up; its checkpoint is written soon after', async () => {
    const { db, store } = await open();
    const handled: string[] = [];
    let batches = 0;
    const consumer = new LogConsumer(
      { name: 'tocks', db, store, log, acts: (e) => e.type === 'Tock' },
      async (tx, events) => {
        for (const e of events) {
          handled.push(e.type);
          if (e.type === 'Tock') await recordTally(tx, e);
        }
      },
    );
    const append = (type: string, n: number) =>
      Promise.all(
        Array.from({ length: n }, (_, i) =>
          store.append(`${type}-${Date.now()}-${i}`, [{ type, data: {}, metadata: meta }], {
            expectedRevision: 'no_stream',
          }),
        ),
      );
    const caughtUp = async () => {
      const head = await store.headPosition({ committed: true });
      await expect.poll(() => consumer.checkpoint(), { timeout: 10_000 }).toBe(head);
    };
    await db.exec('TRUNCATE tally');
    consumer.start(() => batches++);
    await append('Tick', 30);
    await caughtUp();
    expect({ handled, batches }).toEqual({ handled: [], batches: 0 });

    await append('Tock', 5);
    await append('Tick', 5);
    await caughtUp();
    await consumer.stop();
    expect(handled.filter((t) => t === 'Tock')).toHaveLength(5);
    expect(batches).toBeGreaterThan(0);
    expect(await countTally(db)).toEqual({ n: 5, doubles: 0 });
  });
});
