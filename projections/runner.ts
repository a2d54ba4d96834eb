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
 * Keeps each projection's read model up to date. Several processes may run it: each batch takes the
 * projection's advisory lock for its transaction, so one process at a time applies it, and the checkpoint row
 * (locked FOR UPDATE) makes a batch that another process already applied a no-op. A process that finds the
 * lock taken stands by and tries again, which is also how it takes over when the active one dies.
 */
export class ProjectionRunner {
  readonly #db: Database;
  readonly #store: EventStore;
  readonly #log: Logger;
  readonly projections: Projection[];
  readonly #subscriptions = new Map<string, Subscription>();
  /** Emits `checkpoint` (name, position) after each committed batch in this process. */
  readonly events = new EventEmitter();

  constructor(db: Database, store: EventStore, projections: Projection[], log: Logger) {
    this.#db = db;
    this.#store = store;
    this.projections = projections;
    this.#log = log;
    this.events.setMaxListeners(0);
  }

  start(): void {
    for (const projection of this.projections) {
      if (this.#subscriptions.has(projection.name)) continue;
      // The checkpoint as this process last left it; re-read from the table after standing by or a rebuild.
      let position: Position | undefined;
      let readFrom: Position = START;
      const sub = this.#store.subscribe(
        {
          from: async () => {
            readFrom = position ??= await readCheckpoint(this.#db, projection.name);
            return readFrom;
          },
          batchSize: 500,
        },
        async (events) => {
          try {
            position = await this.#db.transaction(async (tx) => {
              const { rows } = await tx.query<{ locked: boolean }>(
                'SELECT pg_try_advisory_xact_lock($1) AS locked',
                [lockKey(projection.name)],
              );
              if (!rows[0].locked) throw new Standby();
              return applyBatch(tx, projection, events, readFrom);
            });
            this.events.emit('checkpoint', projection.name, position);
          } catch (error) {
            position = undefined;
            if (!(error instanceof Standby))
              this.#log.error({ err: error, projection: projection.name }, 'projection batch failed');
            throw error;
          }
        },
      );
      this.#subscriptions.set(projection.name, sub);
    }
  }

  get running(): boolean {
    return this.#subscriptions.size === this.projections.length;
  }

  /** Resolves once every projection has applied everything committed before the call (tests, CLI). */
  async caughtUp(): Promise<void> {
    await Promise.all([...this.#subscriptions.values()].map((s) => s.caughtUp()));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#subscriptions.values()].map((s) => s.stop()));
    this.#subscriptions.clear();
  }
}
