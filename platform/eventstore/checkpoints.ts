import { type Database, literal, type Queryable, type Transaction } from '../db/database.ts';
import type { Migration } from '../db/migrations.ts';
import type { Logger } from '../logger.ts';
import { applyEachOrPark, isTransient, parkBehind, parkedStreamsSql } from './parked-events.ts';
import { ParkedRetries } from './parked-retries.ts';
import { type Position, START, type StoredEvent } from './types.ts';

/**
 * Consumers of the log that keep their own state in the database (projections, process managers) keep their
 * checkpoint in a table beside it: `projection_checkpoints` or `process_checkpoints`, rows of (name, position).
 */
export type CheckpointTable = 'projection_checkpoints' | 'process_checkpoints';

export const checkpointMigrations: Migration[] = [
  {
    id: 'checkpoints-001',
    sql: ['projection_checkpoints', 'process_checkpoints']
      .map(
        (table) => `
CREATE TABLE ${table} (
  name text PRIMARY KEY,
  position text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
)`,
      )
      .join(';\n'),
  },
];
export async function readCheckpoint(q: Queryable, table: CheckpointTable, name: string): Promise<Position> {
  const { rows } = await q.query<{ position: string }>(`SELECT position FROM ${table} WHERE name = $1`, [
    name,
  ]);
  return rows[0]?.position ?? START;
}

/** The advisory lock of `applyCheckpointed`'s `tryLock` is held by another process. */
export class LockTaken extends Error {
  constructor(name: string) {
    super(`${name}: another process holds the lock`);
  }
}

export interface CheckpointOptions {
  table: CheckpointTable;
  name: string;
  /** A channel told of the new checkpoint (payload: `<name> <position>`, then ` changed` when `changed`). */
  notify?: string;
  /** The batch held events the consumer acts on. */
  changed?: boolean;
  /** An advisory lock to take first, in the same round trip; held elsewhere, it throws `LockTaken`. */
  tryLock?: number;
  /** The commit need not wait for the disk (derived data only). */
  asyncCommit?: boolean;
  /** A schema searched before `public` (a rebuild's fresh tables). */
  schema?: string;
}

/** The name a consumer's parked events go by: projections and process managers have checkpoints of their own. */
export const consumerId = (c: { table: CheckpointTable; name: string }) =>
  `${c.table === 'projection_checkpoints' ? 'projection' : 'process'}:${c.name}`;

type Handle = (tx: Transaction, events: StoredEvent[]) => Promise<void>;

/**
 * Takes the consumer's advisory lock (`tryLock`) and, when it got it, its checkpoint row FOR UPDATE: `locked` and
 * `position`. Without parameters, so that it shares its round trip with BEGIN.
 */
const lockingSelect = (c: CheckpointOptions) =>
  `SELECT l.locked, CASE WHEN l.locked THEN (SELECT position FROM ${c.table} WHERE name = ${literal(c.name)} FOR UPDATE) END AS position
   FROM (SELECT ${c.tryLock === undefined ? 'true' : `pg_try_advisory_xact_lock(${c.tryLock | 0})`} AS locked) l`;

/**
 * Applies a batch (`handle` gets the events not applied yet, in order) and moves the checkpoint in one
 * transaction; skips events at or before the checkpoint, so a batch that another process (or an earlier attempt)
 * already applied is a no-op. The checkpoint row is locked FOR UPDATE for the transaction. `readFrom` is where
 * the batch was read from: a checkpoint that moved back since (a rebuild swapped tables in) means the batch misses
 * events, so nothing is applied and the caller reads again from the returned checkpoint. Events of streams with
 * parked events are parked behind them (parked-events.ts); with `oneByOne`, each event is applied in a savepoint
 * and one that fails is parked.
 */
export async function applyCheckpointed(
  tx: Transaction,
  checkpoint: CheckpointOptions,
  events: StoredEvent[],
  handle: Handle,
  options: { readFrom?: Position; oneByOne?: Logger } = {},
): Promise<Position> {
  const { table, name } = checkpoint;
  const consumer = consumerId(checkpoint);
  // Without parameters, so that it shares its round trip with BEGIN (and the checkpoint's move with COMMIT). The
  // parked streams are read by a statement of their own, after the locks are held: a statement that waited for
  // the checkpoint row reads other tables in the snapshot it took before the wait, and would miss a stream that
  // the lock's holder parked meanwhile (its later events then applied ahead of the parked one). The locking
  // statement hands its answer on in a transaction-local setting (the round trip answers with the last result).
  const { rows } = await tx.query<{ locked: boolean; position: string | null; parked: string[] | null }>(
    `${checkpoint.schema ? `SET LOCAL search_path TO ${checkpoint.schema}, public;` : ''}
     SELECT set_config('postline.checkpoint', row_to_json(c)::text, true) FROM (${lockingSelect(checkpoint)}) c;
     SELECT (c->>'locked')::boolean AS locked, c->>'position' AS position,
       CASE WHEN (c->>'locked')::boolean THEN ${parkedStreamsSql(literal(consumer))} END AS parked
       ${checkpoint.asyncCommit ? `, set_config('synchronous_commit', 'off', true)` : ''}
     FROM (SELECT current_setting('postline.checkpoint')::json AS c) s`,
  );
  if (!rows[0].locked) throw new LockTaken(name);
  let current = rows[0].position ?? undefined;
  if (current === undefined) {
    await tx.query(`INSERT INTO ${table} (name, position) VALUES ($1, $2)`, [name, START]);
    current = START;
  }
  if (options.readFrom !== undefined && current < options.readFrom) return current;
  const fresh = events.filter((e) => e.position > (current as Position));
  if (fresh.length === 0) return current;
  const parked = new Set(rows[0].parked ?? []);
  if (options.oneByOne) await applyEachOrPark(tx, consumer, fresh, handle, parked, options.oneByOne);
  else if (parked.size === 0) await handle(tx, fresh);
  else {
    await parkBehind(
      tx,
      consumer,
      fresh.filter((e) => parked.has(e.streamId)),
    );
    const others = fresh.filter((e) => !parked.has(e.streamId));
    if (others.length > 0) await handle(tx, others);
  }
  const position = fresh[fresh.length - 1].position;
  const move = `UPDATE ${table} SET position = ${literal(position)}, updated_at = now() WHERE name = ${literal(name)}`;
  const payload = `${name} ${position}${checkpoint.changed ? ' changed' : ''}`;
  tx.atCommit(
    checkpoint.notify
      ? `WITH moved AS (${move} RETURNING name) SELECT pg_notify(${literal(checkpoint.notify)}, ${literal(payload)}) FROM moved`
      : move,
  );
  return position;
}

/**
 * Applies a batch with `applyCheckpointed` in a transaction of its own. When the batch fails for a reason of its
 * own (not a lock held elsewhere, not the database's trouble), it is applied again event by event, and the events
 * that fail are parked: a consumer never stops on an event.
 */
export async function consume(
  db: Database,
  checkpoint: CheckpointOptions,
  events: StoredEvent[],
  handle: Handle,
  options: { readFrom?: Position; log: Logger },
): Promise<Position> {
  try {
    return await db.transaction((tx) =>
      applyCheckpointed(tx, checkpoint, events, handle, { readFrom: options.readFrom }),
    );
  } catch (error) {
    if (error instanceof LockTaken || isTransient(error)) throw error;
    return db.transaction((tx) =>
      applyCheckpointed(tx, checkpoint, events, handle, {
        readFrom: options.readFrom,
        oneByOne: options.log,
      }),
    );
  }
}

/**
 * The retries of the consumer's parked streams (parked-retries.ts), each stream in a transaction that holds the
 * consumer's lock and checkpoint row as its batches do.
 */
export function parkedRetries(
  db: Database,
  checkpoint: CheckpointOptions,
  handle: Handle,
  log: Logger,
): ParkedRetries {
  return new ParkedRetries({
    db,
    consumer: consumerId(checkpoint),
    handle,
    lock: async (tx) => (await tx.query<{ locked: boolean }>(lockingSelect(checkpoint))).rows[0].locked,
    log,
  });
}
