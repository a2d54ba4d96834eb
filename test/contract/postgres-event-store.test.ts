import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { BlobRows, blobRowMigrations } from '../../platform/blob-rows.ts';
import { migrate } from '../../platform/db/migrations.ts';
import { PostgresEventStore } from '../../platform/eventstore/postgres/store.ts';
import { START, type StoredEvent } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import { openTestDatabase } from '../support/databases.ts';
import { PATIENCE } from '../support/patience.ts';
import { eventStoreContract } from './event-store.contract.ts';

/** A test database with the blob store's tables, and what its rows hold. */
async function withBlobRows() {
  const database = await openTestDatabase();
  await migrate(database.db, blobRowMigrations);
  const rows = new BlobRows(database.db);
  return {
    ...database,
    blobs: { get: (key: string) => rows.get(key), unnamed: () => rows.unnamed('blob_~', 10_000) },
  };
}

eventStoreContract('PostgreSQL', async () => {
  const { db, blobs, dispose } = await withBlobRows();
  return { open: (o) => PostgresEventStore.create(db, { ...o, pollMs: 200 }), blobs, dispose };
});

describe('PostgreSQL event store group commit', () => {
  it('runs one batch of appends at a time: those made while it commits go together in the next', async () => {
    const { db, url, dispose } = await openTestDatabase();
    let inserts = 0;
    const counted = {
      ...db,
      query: ((sql: string, params?: unknown[]) => {
        if (sql.includes('INSERT INTO events')) inserts++;
        return db.query(sql, params);
      }) as typeof db.query,
    };
    const store = await PostgresEventStore.create(counted, { pollMs: 200 });
    const meta = { orgId: 'o', mode: 'test', actor: 't' } as any;
    const append = (i: number) =>
      store.append(`s-${i}`, [{ type: 'T', data: { i }, metadata: meta }], { expectedRevision: 'no_stream' });

    // The first batch's INSERT waits for this lock, so the appends after it are made while it is in flight.
    const locker = new pg.Client({ connectionString: url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE events IN SHARE MODE');
    const appends = [append(0)];
    for (let i = 1; i <= 5; i++) {
      await new Promise((r) => setImmediate(r)); // each in a run of code of its own
      appends.push(append(i));
    }
    await locker.query('COMMIT');
    const results = await Promise.all(appends);

    expect(results.map((r) => r.nextRevision)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(inserts).toBe(2);
    await locker.end();
    await store.close();
    await dispose();
  });
});

/** A store on a test database whose statements are counted: how many of them match `pattern`. */
async function countingStore(pattern: RegExp) {
  const database = await openTestDatabase();
  const counted = { n: 0 };
  const db = {
    ...database.db,
    query: ((sql: string, params?: unknown[]) => {
      if (pattern.test(sql)) counted.n++;
      return database.db.query(sql, params);
    }) as typeof database.db.query,
  };
  const store = await PostgresEventStore.create(db, { pollMs: 200 });
  counted.n = 0;
  return { store, counted, dispose: database.dispose };
}

const meta = { orgId: 'o', mode: 'test', actor: 't' } as any;

describe('PostgreSQL event store statements shared', () => {
  it('refuses the appends of a batch whose expectations are stale alone: one INSERT for the batch', async () => {
    const { store, counted, dispose } = await countingStore(/INSERT INTO events/);
    const taken = Array.from({ length: 10 }, (_, i) => `taken-${i}`);
    for (const s of taken)
      await store.append(s, [{ type: 'T', data: {}, metadata: meta }], { expectedRevision: 'no_stream' });
    counted.n = 0;
    const event = (type: string) => [{ type, data: {}, metadata: meta }];
    const results = await Promise.allSettled([
      ...taken.map((s) => store.append(s, event('U'), { expectedRevision: 'no_stream' })),
      ...taken.map((_, i) => store.append(`fresh-${i}`, event('F'), { expectedRevision: 'no_stream' })),
    ]);
    expect(results.slice(0, 10).map((r) => r.status)).toEqual(taken.map(() => 'rejected'));
    for (const r of results.slice(0, 10))
      expect((r as PromiseRejectedResult).reason).toMatchObject({ actual: 0, expected: 'no_stream' });
    expect(results.slice(10).map((r) => r.status)).toEqual(taken.map(() => 'fulfilled'));
    expect(counted.n).toBe(1);
    await store.close();
    await dispose();
  });

  it('reads the streams asked for together in one statement, each from its revision', async () => {
    const { store, counted, dispose } = await countingStore(/FROM events/);
    for (let i = 0; i < 5; i++)
      await store.append(
        `r-${i}`,
        Array.from({ length: i + 1 }, (_, k) => ({ type: `E${k}`, data: { i }, metadata: meta })),
        { expectedRevision: 'no_stream' },
      );
    counted.n = 0;
    const reads = await Promise.all([
      ...Array.from({ length: 5 }, (_, i) => store.readStream(`r-${i}`)),
      store.readStream('r-4', { fromRevision: 3 }),
      store.readStream('r-unknown'),
    ]);
    expect(counted.n).toBe(1);
    expect(reads.map((events) => events.map((e) => `${e.streamId}:${e.revision}:${e.type}`))).toEqual([
      ...Array.from({ length: 5 }, (_, i) => Array.from({ length: i + 1 }, (_, k) => `r-${i}:${k}:E${k}`)),
      ['r-4:3:E3', 'r-4:4:E4'],
      [],
    ]);
    await store.close();
    await dispose();
  });
});

describe('PostgreSQL event store with blob rows', () => {
  it("writes the blobs of the appends in flight in their events' statement, up to about 4 MiB of them", async () => {
    const { db, blobs, dispose } = await withBlobRows();
    const statements: string[] = [];
    const counted = {
      ...db,
      query: ((sql: string, params?: unknown[]) => {
        statements.push(sql);
        return db.query(sql, params);
      }) as typeof db.query,
    };
    const store = await PostgresEventStore.create(counted, { pollMs: 200 });
    const meta = { orgId: 'o', mode: 'test', actor: 't' } as any;
    const append = (i: number, size: number) => {
      const blob = { key: newId('blob'), bytes: Buffer.alloc(size, i) };
      return store
        .append(`b-${i}`, [{ type: 'T', data: { key: blob.key }, metadata: meta }], {
          expectedRevision: 'no_stream',
          blobs: [blob],
        })
        .then(() => blob);
    };

    statements.length = 0;
    const small = await Promise.all(Array.from({ length: 6 }, (_, i) => append(i, 3000)));
    expect(statements).toHaveLength(1);
    expect(statements[0]).toMatch(/INSERT INTO blob_rows[\s\S]*INSERT INTO events/);
    // Three of 1.5 MiB weigh more than a batch holds: two go together, the third in a statement of its own.
    statements.length = 0;
    const large = await Promise.all([6, 7, 8].map((i) => append(i, 1536 * 1024)));
    expect(statements).toHaveLength(2);
    // Buffer.equals: toEqual compares a Buffer byte by byte as an object's fields, 6 s for one of 1.5 MiB.
    for (const blob of [...small, ...large])
      expect((await blobs.get(blob.key))?.equals(blob.bytes), blob.key).toBe(true);
    await store.close();
    await dispose();
  });
});

describe('PostgreSQL event store under out-of-order commits', () => {
  it('stops a subscription at once, not at its next poll (an hour away here)', async () => {
    const { db, dispose } = await openTestDatabase();
    const store = await PostgresEventStore.create(db, { pollMs: 3_600_000 });
    const seen: StoredEvent[] = [];
    const sub = store.subscribe({ from: START }, async (events) => {
      seen.push(...events);
    });
    const meta = { orgId: 'o', mode: 'test', actor: 't' } as any;
    await store.append('s-1', [{ type: 'T', data: {}, metadata: meta }], { expectedRevision: 'no_stream' });
    await sub.caughtUp();
    // Without the wake-up, this waits out the poll: the test times out.
    await sub.stop();
    expect(seen.map((e) => e.streamId)).toEqual(['s-1']);
    await store.close();
    await dispose();
  });

  it('delivers every event exactly once, in position order, although a transaction commits late', async () => {
    const { db, url, dispose } = await openTestDatabase();
    const store = await PostgresEventStore.create(db, { pollMs: 50 });
    // The subscriber's reads of the log, to know when it has looked again.
    const reads = vi.spyOn(store, 'readAll');
    const seen: StoredEvent[] = [];
    const sub = store.subscribe({ from: START, batchSize: 7 }, async (events) => {
      seen.push(...events);
    });
    const meta = { orgId: 'o', mode: 'test', actor: 't' };

    // A writer takes its global position, then holds its transaction open while others commit.
    const slow = new pg.Client({ connectionString: url });
    await slow.connect();
    await slow.query('BEGIN');
    await slow.query(
      `INSERT INTO events (stream_id, stream_revision, type, data, metadata) VALUES ('slow-1', 0, 'Slow', '{}', $1)`,
      [JSON.stringify(meta)],
    );

    const writers = Array.from({ length: 8 }, (_, w) =>
      (async () => {
        for (let i = 0; i < 25; i++) {
          await store.append(`fast-${w}`, [{ type: 'Fast', data: { w, i }, metadata: meta as any }], {
            expectedRevision: 'any',
          });
        }
      })(),
    );
    await Promise.all(writers);
    // The subscriber may not move past the open transaction: having read the log three times since the others
    // committed (reads begun before may be still under way), it has delivered nothing committed after it.
    const readsBegun = reads.mock.calls.length;
    await vi.waitFor(
      () => expect(reads.mock.settledResults.length).toBeGreaterThanOrEqual(readsBegun + 3),
      PATIENCE,
    );
    expect(seen.some((e) => e.streamId === 'slow-1')).toBe(false);
    expect(seen).toHaveLength(0);

    await slow.query('COMMIT');
    await slow.end();
    await sub.caughtUp();
    await sub.stop();

    expect(seen).toHaveLength(201);
    expect(new Set(seen.map((e) => e.position)).size).toBe(201);
    const positions = seen.map((e) => e.position);
    expect([...positions].sort()).toEqual(positions);
    expect(seen.filter((e) => e.streamId === 'slow-1')).toHaveLength(1);
    for (let w = 0; w < 8; w++) {
      expect(seen.filter((e) => e.streamId === `fast-${w}`).map((e) => (e.data as { i: number }).i)).toEqual([
        ...Array(25).keys(),
      ]);
    }
    await store.close();
    await dispose();
  });

  it('is not held back by a long write in another database of the same server', async () => {
    const ours = await openTestDatabase();
    const theirs = await openTestDatabase();
    const store = await PostgresEventStore.create(ours.db, { pollMs: 100 });
    // Another application's transaction: it has written (so it has a transaction id) and stays open.
    const other = new pg.Client({ connectionString: theirs.url });
    await other.connect();
    try {
      await other.query('BEGIN');
      await other.query('CREATE TABLE their_table (x int); INSERT INTO their_table VALUES (1)');
      const seen: StoredEvent[] = [];
      const sub = store.subscribe({ from: START }, async (events) => {
        seen.push(...events);
      });
      const meta = { orgId: 'o', mode: 'test' as const, actor: 't' };
      await store.append('ours-1', [{ type: 'Ours', data: {}, metadata: meta }], {
        expectedRevision: 'no_stream',
      });
      await vi.waitFor(() => expect(seen.map((e) => e.streamId)).toEqual(['ours-1']), PATIENCE);
      await sub.stop();
    } finally {
      await other.query('ROLLBACK');
      await other.end();
      await store.close();
      await ours.dispose();
      await theirs.dispose();
    }
  });
});

describe('PostgreSQL event store times', () => {
  it("reads an event's time to the millisecond, microseconds cut off", async () => {
    const { db, dispose } = await openTestDatabase();
    const store = await PostgresEventStore.create(db);
    const times = ['2026-11-22T10:00:00.999999Z', '2026-11-22T10:00:01.564Z', '1969-12-31T23:59:59.000500Z'];
    await db.exec(
      times
        .map(
          (t, i) =>
            `INSERT INTO events (stream_id, stream_revision, type, data, metadata, created_at)
               VALUES ('t-1', ${i}, 'T', '{}', '{"orgId":"o","mode":"test"}', '${t}');`,
        )
        .join('\n'),
    );
    const events = await store.readStream('t-1');
    expect(events.map((e) => e.createdAt.toISOString())).toEqual([
      '2026-11-22T10:00:00.999Z',
      '2026-11-22T10:00:01.564Z',
      '1969-12-31T23:59:59.000Z',
    ]);
    await store.close();
    await dispose();
  });
});
