import type { Database, Transaction } from '../platform/db/database.ts';
import { applyCheckpointed, consumerId } from '../platform/eventstore/checkpoints.ts';
import { type EventStore, type Position, START } from '../platform/eventstore/types.ts';
import type { Logger } from '../platform/logger.ts';
import { CHECKPOINT_CHANNEL, lockKey, type Projection } from './projection.ts';
import { applyBatch, handlerOf, readCheckpoint } from './runner.ts';

const LOCK_NOT_AVAILABLE = '55P03';

export interface ProjectionStatus {
  name: string;
  position: Position;
  /** Events in the log after the checkpoint. */
  lag: number;
  updatedAt: string | null;
}

async function countEventsAfter(store: EventStore, position: Position): Promise<number> {
  let count = 0;
  for (let from = position; ; ) {
    const batch = await store.readAll({ from, limit: 5000 });
    count += batch.length;
    if (batch.length < 5000) return count;
    from = batch[batch.length - 1].position;
  }
}

/** Position and lag per projection (`postline projections status`). */
export async function projectionStatus(
  db: Database,
  store: EventStore,
  projections: Projection[],
): Promise<ProjectionStatus[]> {
  const out: ProjectionStatus[] = [];
  for (const p of projections) {
    const { rows } = await db.query<{ position: string; updated_at: Date }>(
      'SELECT position, updated_at FROM projection_checkpoints WHERE name = $1',
      [p.name],
    );
    const position = rows[0]?.position ?? START;
    const lag = await countEventsAfter(store, position);
    out.push({
      name: p.name,
      position,
      lag,
      updatedAt: rows[0] ? new Date(rows[0].updated_at).toISOString() : null,
    });
  }
  return out;
}

/**
 * Applies to the rebuilt tables (`schema`) what the live ones hold beyond them: the events after the rebuilt
 * checkpoint up to the live one, in the swap's transaction, which holds the projection's lock (no live batch comes
 * in between). Without it, what the live runner applied after the replay's last read would be missing from the
 * tables swapped in until the runner applied it again: a read model moving back (a template published a moment
 * ago gone, and a broadcast expanded meanwhile sending to no one). Resolves with the rebuilt checkpoint.
 */
async function catchUpWithLive(
  tx: Transaction,
  store: EventStore,
  projection: Projection,
  schema: string,
  log: Logger,
  batchSize: number,
): Promise<Position> {
  const live = await readCheckpoint(tx, projection.name);
  await tx.query(`SET LOCAL search_path TO ${schema}, public`);
  let rebuilt = await readCheckpoint(tx, projection.name);
  while (rebuilt < live) {
    const events = (await store.readAll({ from: rebuilt, limit: batchSize })).filter(
      (e) => e.position <= live,
    );
    if (events.length === 0) break;
    // Each event in a savepoint, one that fails parked as the replay parks it; the checkpoint moves at COMMIT.
    rebuilt = await applyCheckpointed(
      tx,
      { table: 'projection_checkpoints', name: projection.name, schema },
      events,
      handlerOf(projection),
      { oneByOne: log },
    );
  }
  await tx.query('SET LOCAL search_path TO public');
  return rebuilt;
}

/**
 * Rebuilds one projection from the start of the log into fresh copies of its tables (in a schema of their own,
 * reached through `search_path`), in short batches so no long transaction holds the log's readers back, then
 * swaps them in under the projection's lock, with what the live tables took in meanwhile (catchUpWithLive). The
 * live tables keep serving the API until the swap; the live runner then continues from the rebuilt checkpoint.
 */
export async function rebuildProjection(
  db: Database,
  store: EventStore,
  projection: Projection,
  log: Logger,
  onProgress: (done: number, total: number) => void = () => {},
  batchSize = 1000,
): Promise<{ events: number }> {
  const schema = `rebuild_${projection.name.replace(/[^a-z0-9_]/gi, '_')}`;
  const consumer = consumerId({ table: 'projection_checkpoints', name: projection.name });
  await db.exec(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema};`);
  for (const t of projection.tables) {
    await db.query(`CREATE TABLE ${schema}.${t} (LIKE public.${t} INCLUDING ALL)`);
  }
  // Its checkpoint and parked events are its own too: the live ones describe the old tables (a stream parked
  // there, its bug since fixed, would otherwise be parked by the rebuild instead of applied to the new tables).
  for (const t of ['projection_checkpoints', 'parked_events', 'parked_streams']) {
    await db.query(`CREATE TABLE ${schema}.${t} (LIKE public.${t} INCLUDING ALL)`);
  }

  const total = await countEventsAfter(store, START);
  let from: Position = START;
  let done = 0;
  onProgress(0, total);
  while (true) {
    const events = await store.readAll({ from, limit: batchSize });
    if (events.length === 0) break;
    await applyBatch(db, projection, events, { schema, log });
    from = events[events.length - 1].position;
    done += events.length;
    onProgress(done, Math.max(total, done));
  }

  // The swap needs its tables exclusively. A reader joining two of them may hold one while waiting for the
  // other, so the swap never waits long for a lock: it gives way (lock_timeout) and tries again.
  for (let attempt = 0; ; attempt++) {
    try {
      await db.transaction(async (tx) => {
        await tx.query(`SET LOCAL lock_timeout = '200ms'`);
        await tx.query('SELECT pg_advisory_xact_lock($1)', [lockKey(projection.name)]);
        await tx.query(
          `LOCK TABLE ${projection.tables.map((t) => `public.${t}`).join(', ')} IN ACCESS EXCLUSIVE MODE`,
        );
        const rebuilt = await catchUpWithLive(tx, store, projection, schema, log, batchSize);
        for (const t of projection.tables) {
          await tx.query(`DROP TABLE public.${t}`);
          await tx.query(`ALTER TABLE ${schema}.${t} SET SCHEMA public`);
        }
        await tx.query(
          `INSERT INTO projection_checkpoints (name, position) VALUES ($1, $2)
           ON CONFLICT (name) DO UPDATE SET position = EXCLUDED.position, updated_at = now()`,
          [projection.name, rebuilt],
        );
        // The parked events go with the tables they were parked from: the live ones are the old tables'.
        for (const t of ['parked_events', 'parked_streams']) {
          await tx.query(`DELETE FROM public.${t} WHERE consumer = $1`, [consumer]);
          await tx.query(`INSERT INTO public.${t} SELECT * FROM ${schema}.${t} WHERE consumer = $1`, [
            consumer,
          ]);
        }
        // Readers' caches of the old tables must go.
        await tx.query(`SELECT pg_notify($1, $2::text || ' ' || $3::text || ' changed')`, [
          CHECKPOINT_CHANNEL,
          projection.name,
          rebuilt,
        ]);
        await tx.query(`DROP SCHEMA ${schema} CASCADE`);
      });
      break;
    } catch (error: any) {
      if (error?.code !== LOCK_NOT_AVAILABLE || attempt >= 100) throw error;
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 80));
    }
  }
  return { events: done };
}
