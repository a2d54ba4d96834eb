import { EventEmitter } from 'node:events';
import type { Database, Transaction } from '../platform/db/database.ts';
import {
  type EventStore,
  type Position,
  START,
  type StoredEvent,
  type Subscription,
} from '../platform/eventstore/types.ts';
import type { Logger } from '../platform/logger.ts';
import { CHECKPOINT_CHANNEL, lockKey, type Projection } from './projection.ts';

class Standby extends Error {}

export async function readCheckpoint(q: Pick<Transaction, 'query'>, name: string): Promise<Position> {
  const { rows } = await q.query<{ position: string }>(
    'SELECT position FROM projection_checkpoints WHERE name = $1',
    [name],
  );
  return rows[0]?.position ?? START;
}

/**
 * Applies a batch and moves the checkpoint in one transaction; skips events at or before the checkpoint.
 * `readFrom` is where the batch was read from: a checkpoint that moved back since (a rebuild swapped tables in)
 * means the batch misses events, so nothing is applied and the caller reads again from the returned checkpoint.
 */
export async function applyBatch(
  tx: Transaction,
  projection: Projection,
  events: StoredEvent[],
  readFrom?: Position,
): Promise<Position> {
  const { rows } = await tx.query<{ position: string }>(
    'SELECT position FROM projection_checkpoints WHERE name = $1 FOR UPDATE',
    [projection.name],
  );
  let checkpoint = rows[0]?.position;
  if (checkpoint === undefined) {
    await tx.query('INSERT INTO projection_checkpoints (name, position) VALUES ($1, $2)', [
      projection.name,
      START,
    ]);
    checkpoint = START;
  }
  if (readFrom !== undefined && checkpoint < readFrom) return checkpoint;
  const fresh = events.filter((e) => e.position > checkpoint);
  if (fresh.length === 0) return checkpoint;
  for (const event of fresh) await projection.apply(tx, event);
  const position = fresh[fresh.length - 1].position;
  await tx.query(
    `WITH moved AS (UPDATE projection_checkpoints SET position = $2, updated_at = now() WHERE name = $1 RETURNING name)
     SELECT pg_notify($3, name) FROM moved`,
    [projection.name, position, CHECKPOINT_CHANNEL],
  );
  return position;
}

/**
 * Keeps every projection's read model up to date from one subscription: each batch of the log is read (and its
 * JSON parsed) once, then applied to each projection in a transaction of its own, so one projection's failure
 * holds back only itself. Several processes may run the runner: each projection's transaction takes that
 * projection's advisory lock, so one process at a time applies it, and the checkpoint row (locked FOR UPDATE)
 * makes a batch another process already applied a no-op. A process that finds a lock taken stands by for that
 * projection and re-reads its checkpoint, which is also how it takes over when the active one dies.
 */
export class ProjectionRunner {
  readonly #db: Database;
  readonly #store: EventStore;
  readonly #log: Logger;
  readonly projections: Projection[];
  #subscription?: Subscription;
  /** Each projection's checkpoint as this process last left it; undefined: re-read it from the table. */
  readonly #positions = new Map<string, Position | undefined>();
  /** Emits `checkpoint` (name, position) after each committed batch in this process. */
  readonly events = new EventEmitter();

  constructor(db: Database, store: EventStore, projections: Projection[], log: Logger) {
    this.#db = db;
    this.#store = store;
    this.projections = projections;
    this.#log = log;
    this.events.setMaxListeners(0);
  }

  /** Where the next batch must start: the checkpoint of the projection furthest behind. */
  async #from(): Promise<Position> {
    let from: Position | undefined;
    for (const p of this.projections) {
      let position = this.#positions.get(p.name);
      if (position === undefined) {
        position = await readCheckpoint(this.#db, p.name);
        this.#positions.set(p.name, position);
      }
      if (from === undefined || position < from) from = position;
    }
    return from ?? START;
  }

  /** Applies the batch to one projection: `blocked` when another process holds it or it failed. */
  async #applyTo(projection: Projection, events: StoredEvent[]): Promise<'applied' | 'idle' | 'blocked'> {
    const readFrom = this.#positions.get(projection.name) ?? START;
    const mine = events.filter((e) => e.position > readFrom);
    if (mine.length === 0) return 'idle';
    try {
      const position = await this.#db.transaction(async (tx) => {
        const { rows } = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS locked', [
          lockKey(projection.name),
        ]);
        if (!rows[0].locked) throw new Standby();
        return applyBatch(tx, projection, mine, readFrom);
      });
      this.#positions.set(projection.name, position);
      this.events.emit('checkpoint', projection.name, position);
      return 'applied';
    } catch (error) {
      this.#positions.set(projection.name, undefined);
      if (!(error instanceof Standby)) this.#log.error({ err: error, projection: projection.name }, 'projection batch failed');
      return 'blocked';
    }
  }

  start(): void {
    this.#subscription ??= this.#store.subscribe({ from: () => this.#from(), batchSize: 500 }, async (events) => {
      const outcomes = new Set<string>();
      for (const projection of this.projections) outcomes.add(await this.#applyTo(projection, events));
      // Only blocked ones had work (standing by, or failing): back off before reading the batch again.
      if (outcomes.has('blocked') && !outcomes.has('applied')) throw new Standby();
    });
  }

  get running(): boolean {
    return this.#subscription !== undefined;
  }

  /** Resolves once every projection has applied everything committed before the call (tests, CLI). */
  async caughtUp(): Promise<void> {
    await this.#subscription?.caughtUp();
  }

  async stop(): Promise<void> {
    await this.#subscription?.stop();
    this.#subscription = undefined;
  }
}
