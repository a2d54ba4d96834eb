import { describe, expect, it, vi } from 'vitest';
import { ThreadedProjectionRunner } from '../../bin/projections-thread.ts';
import { listParked } from '../../platform/eventstore/parked-events.ts';
import { createLogger } from '../../platform/logger.ts';
import type { Projection } from '../../projections/projection.ts';
import { rebuildProjection } from '../../projections/rebuild.ts';
import { ProjectionRunner, readCheckpoint } from '../../projections/runner.ts';
import { PATIENCE } from '../support/patience.ts';
import { startTestService } from '../support/service.ts';
import { countTally, recordTally, useTallyDatabase } from '../support/tally-database.ts';

const log = createLogger('silent');
const meta = { orgId: 'org_1', mode: 'test' as const, actor: 'test' };

/** Applies events to `tally`, and fails on a `Boom`. */
const tally: Projection = {
  name: 'tally',
  tables: ['tally'],
  async apply(tx, event) {
    if (event.type === 'Boom') throw new Error('handler failed');
    await recordTally(tx, event);
  },
};

const { open } = useTallyDatabase();

describe('projection runner', () => {
  it('applies each event once although two processes run the projection', async () => {
    const a = await open();
    const b = await open();
    const runnerA = new ProjectionRunner(a.db, a.store, [tally], log);
    const runnerB = new ProjectionRunner(b.db, b.store, [tally], log);
    runnerA.start();
    runnerB.start();
    await Promise.all(
      Array.from({ length: 10 }, (_, w) =>
        (async () => {
          for (let i = 0; i < 30; i++)
            await a.store.append(`s-${w}`, [{ type: 'Tick', data: {}, metadata: meta }], {
              expectedRevision: 'any',
            });
        })(),
      ),
    );
    await runnerA.caughtUp();
    await runnerB.caughtUp();
    expect(await countTally(a.db)).toEqual({ n: 300, doubles: 0 });
    // The committed head: the visible one can lag behind a transaction of another database (xmin is cluster-wide).
    expect(await readCheckpoint(a.db, 'tally')).toBe(await a.store.headPosition({ committed: true }));
    await runnerA.stop();
    await runnerB.stop();
  });

  it('parks an event it fails on, and commits the rest of its batch with the checkpoint', async () => {
    const { db, store } = await open();
    const count = async (stream: string) =>
      (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM tally WHERE stream_id = $1', [stream]))
        .rows[0].n;
    await store.append(
      'boom-1',
      [
        { type: 'Tick', data: {}, metadata: meta },
        { type: 'Boom', data: {}, metadata: meta },
        { type: 'Tick', data: {}, metadata: meta },
      ],
      { expectedRevision: 'no_stream' },
    );
    const { position: head } = await store.append('calm-1', [{ type: 'Tick', data: {}, metadata: meta }], {
      expectedRevision: 'no_stream',
    });
    const runner = new ProjectionRunner(db, store, [tally], log);
    runner.start();
    await runner.caughtUp();
    await runner.stop();
    // The event before the failing one is applied; the one after it waits behind it; another stream goes on.
    expect(await count('boom-1')).toBe(1);
    expect(await count('calm-1')).toBe(1);
    expect(await readCheckpoint(db, 'tally')).toBe(head);
    const parked = await listParked(db);
    expect(parked.map((p) => [p.consumer, p.stream, p.type, p.attempts])).toEqual([
      ['projection:tally', 'boom-1', 'Boom', 1],
      ['projection:tally', 'boom-1', 'Tick', 1],
    ]);
    expect(parked[0].error).toBe('Error: handler failed');
    await db.query('DELETE FROM parked_events');
  });
});

describe('rebuild', () => {
  it('rebuilds api_keys into fresh tables, swaps them in, and the API answers throughout', async () => {
    const svc = await startTestService();
    try {
      const org = await svc.createOrg('pro');
      for (let i = 0; i < 30; i++) await org.live.post('/v1/api-keys', { name: `k${i}` });
      const before = (await org.live.get('/v1/api-keys?limit=100')).body;
      const { services, runner } = svc.postline;
      // Damage the read model: a rebuild must restore it from the log.
      await services.db.query(`UPDATE api_keys SET name = 'corrupted'`);
      const progress: number[] = [];
      let answered = 0;
      const polling = (async () => {
        while (progress.at(-1) !== -1) {
          const r = await org.live.get('/v1/api-keys?limit=1');
          if (r.status === 200) answered++;
          else throw new Error(`API answered ${r.status} during rebuild`);
        }
      })();
      const projection = runner.projections.find((p) => p.name === 'api_keys')!;
      const { events } = await rebuildProjection(
        services.db,
        services.store,
        projection,
        services.log,
        (done) => progress.push(done),
        7,
      );
      progress.push(-1);
      await polling;
      expect(events).toBeGreaterThan(30);
      expect(progress.length).toBeGreaterThan(4);
      expect(answered).toBeGreaterThan(0);
      const after = (await org.live.get('/v1/api-keys?limit=100')).body;
      expect(after).toEqual(before);
      // The live runner continues on the rebuilt tables.
      const created = await org.live.post('/v1/api-keys', { name: 'after rebuild' });
      expect((await org.live.get('/v1/api-keys?limit=1')).body.data[0].id).toBe(created.body.id);
      const { rows } = await services.db.query(
        `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'rebuild_%'`,
      );
      expect(rows).toEqual([]);
    } finally {
      await svc.close();
    }
  });
});

describe('rebuild of a projection with parked events', () => {
  it('applies a stream parked in the live model (its bug since fixed), and swaps in its own parked events', async () => {
    const { db, store } = await open();
    await db.exec('CREATE TABLE fixed (stream_id text, revision int)');
    let broken = true;
    const fixed: Projection = {
      name: 'fixed',
      tables: ['fixed'],
      async apply(tx, event) {
        if (!event.streamId.startsWith('fix')) return;
        if (event.type === 'Bug' && broken) throw new Error('bug since fixed');
        if (event.type === 'Boom') throw new Error('handler failed');
        await tx.query('INSERT INTO fixed VALUES ($1, $2)', [event.streamId, event.revision]);
      },
    };
    const rows = async () =>
      (
        await db.query<{ s: string }>(`SELECT stream_id || '@' || revision AS s FROM fixed ORDER BY 1`)
      ).rows.map((r) => r.s);
    const parked = async () =>
      (await listParked(db))
        .filter((p) => p.consumer === 'projection:fixed')
        .map((p) => `${p.stream}:${p.type}:${p.attempts}`);
    const tick = { type: 'Tick', data: {}, metadata: meta };
    await store.append('fix-1', [tick, { type: 'Bug', data: {}, metadata: meta }, tick], {
      expectedRevision: 'no_stream',
    });
    await store.append('fix-2', [tick], { expectedRevision: 'no_stream' });
    await store.append('fix-3', [{ type: 'Boom', data: {}, metadata: meta }], {
      expectedRevision: 'no_stream',
    });
    const runner = new ProjectionRunner(db, store, [fixed], log);
    runner.start();
    await runner.caughtUp();
    await runner.stop();
    // Live: fix-1 waits behind its Bug; its parked events are retried once more (attempts 2).
    await db.query(`UPDATE parked_streams SET due_at = now() - interval '1 second'`);
    expect(await runner.retryParked()).toBe(0);
    expect(await rows()).toEqual(['fix-1@0', 'fix-2@0']);
    expect(await parked()).toEqual(['fix-1:Bug:2', 'fix-1:Tick:2', 'fix-3:Boom:2']);

    broken = false;
    await rebuildProjection(db, store, fixed, log, () => {}, 2);
    expect(await rows()).toEqual(['fix-1@0', 'fix-1@1', 'fix-1@2', 'fix-2@0']);
    // The parked events are the rebuild's: fix-3's, parked once; fix-1 has none, and no due row.
    expect(await parked()).toEqual(['fix-3:Boom:1']);
    const due = await db.query(`SELECT stream FROM parked_streams WHERE consumer = 'projection:fixed'`);
    expect(due.rows).toEqual([{ stream: 'fix-3' }]);
  });
});

describe('the projection runner thread (PostgreSQL)', () => {
  it('serves read-your-writes from its own thread, and is started again when it dies', async () => {
    const svc = await startTestService();
    try {
      const { runner } = svc.postline;
      if (!(runner instanceof ThreadedProjectionRunner))
        throw new Error('expected the threaded runner on PostgreSQL');
      const org = await svc.createOrg('pro');
      const first = await org.live.post('/v1/api-keys', { name: 'before' });
      expect((await org.live.get(`/v1/api-keys?limit=100`)).body.data.map((k: any) => k.id)).toContain(
        first.body.id,
      );

      const died = runner.thread!;
      await died.terminate();
      await vi.waitFor(() => {
        expect(runner.thread).not.toBe(died);
        expect(runner.running).toBe(true);
      }, PATIENCE);
      // The new thread resumes from the checkpoints: a write made now is read back at once.
      const second = await org.live.post('/v1/api-keys', { name: 'after' });
      expect(second.status).toBe(201);
      const ids = (await org.live.get(`/v1/api-keys?limit=100`)).body.data.map((k: any) => k.id);
      expect(ids).toEqual(expect.arrayContaining([first.body.id, second.body.id]));
    } finally {
      await svc.close();
    }
  });

  it('reads the log as soon as a request waits for its write, without waiting for a NOTIFY', async () => {
    // The thread polls the log once an hour: only a wake-up from the waiting request gets there in time.
    const svc = await startTestService({ env: { LOG_POLL_MS: String(3_600_000) } });
    try {
      const { db, store, readYourWrites } = svc.postline.services;
      // A write through the store first: the thread has read the log and gone back to waiting once this settles.
      const { position: first } = await store.append('ping-0', [{ type: 'Ping', data: {}, metadata: meta }], {
        expectedRevision: 'no_stream',
      });
      await readYourWrites.waitFor(['emails'], first);
      await new Promise((r) => setTimeout(r, 100));
      // Written as by a writer that sends no NOTIFY.
      await db.query(
        `INSERT INTO events (stream_id, stream_revision, type, data, metadata)
         VALUES ('ping-1', 0, 'Ping', '{}', '{"orgId":"org_1","mode":"test","actor":"test"}')`,
      );
      const position = await store.headPosition({ committed: true });
      // Past the deadline it throws (projection_timeout).
      await expect(readYourWrites.waitFor(['emails', 'api_keys'], position)).resolves.toBeUndefined();
    } finally {
      await svc.close();
    }
  });
});
