import { literal, type Queryable, type Transaction } from '../db/database.ts';
import { type Position, START, type StoredEvent } from './types.ts';

/**
 * Consumers of the log that keep their own state in the database (projections, process managers) keep their
 * checkpoint in a table beside it: `projection_checkpoints` or `process_checkpoints`, rows of (name, position).
 */
export type CheckpointTable = 'projection_checkpoints' | 'process_checkpoints';

export const checkpointTableSql = (table: CheckpointTable) => `
CREATE TABLE IF NOT EXISTS ${table} (
  name text PRIMARY KEY,
  position text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
)`;

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

/**
 * Applies a batch (`handle` gets the events not applied yet, in order) and moves the checkpoint in one
 * transaction; skips events at or before the checkpoint, so a batch that another process (or an earlier attempt)
 * already applied is a no-op. The checkpoint row is locked FOR UPDATE for the transaction. `readFrom` is where
 * the batch was read from: a checkpoint that moved back since (a rebuild swapped tables in) means the batch misses
 * events, so nothing is applied and the caller reads again from the returned checkpoint. `notify` names a channel
 * told of the new checkpoint (payload: `<name> <position>`, followed by ` changed` when `changed` says the batch
 * held events the consumer acts on).
 *
 * `tryLock`: an advisory lock to take first, in the same round trip; held elsewhere, it throws `LockTaken` and
 * nothing is applied. `asyncCommit`: the transaction's commit need not wait for the disk (derived data only).
 */
export async function applyCheckpointed(
  tx: Transaction,
  checkpoint: {
    table: CheckpointTable;
    name: string;
    notify?: string;
    changed?: boolean;
    tryLock?: number;
    asyncCommit?: boolean;
  },
  events: StoredEvent[],
  handle: (tx: Transaction, events: StoredEvent[]) => Promise<void>,
  readFrom?: Position,
): Promise<Position> {
  const { table, name } = checkpoint;
  // Without parameters, so that it shares its round trip with BEGIN (and the checkpoint's move with COMMIT).
  const lock =
    checkpoint.tryLock === undefined ? 'true' : `pg_try_advisory_xact_lock(${checkpoint.tryLock | 0})`;
  const { rows } = await tx.query<{ locked: boolean; position: string | null }>(
    `SELECT l.locked, CASE WHEN l.locked THEN (SELECT position FROM ${table} WHERE name = ${literal(name)} FOR UPDATE) END AS position
       ${checkpoint.asyncCommit ? `, set_config('synchronous_commit', 'off', true)` : ''}
     FROM (SELECT ${lock} AS locked) l`,
  );
  if (!rows[0].locked) throw new LockTaken(name);
  let current = rows[0].position ?? undefined;
  if (current === undefined) {
    await tx.query(`INSERT INTO ${table} (name, position) VALUES ($1, $2)`, [name, START]);
    current = START;
  }
  if (readFrom !== undefined && current < readFrom) return current;
  const fresh = events.filter((e) => e.position > (current as Position));
  if (fresh.length === 0) return current;
  await handle(tx, fresh);
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
