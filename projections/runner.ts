import { EventEmitter } from 'node:events';
import type { Database, Queryable, Transaction } from '../platform/db/database.ts';
import {
  applyCheckpointed,
  readCheckpoint as readStoredCheckpoint,
} from '../platform/eventstore/checkpoints.ts';
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

/** A projection's checkpoint. */
export const readCheckpoint = (q: Queryable, name: string): Promise<Position> =>
  readStoredCheckpoint(q, 'projection_checkpoints', name);

/** Applies a batch to a projection and moves its checkpoint in one transaction (see applyCheckpointed). */
export const applyBatch = (
  tx: Transaction,
  projection: Projection,
  events: StoredEvent[],
  readFrom?: Position,
) =>
  applyCheckpointed(
    tx,
    { table: 'projection_checkpoints', name: projection.name, notify: CHECKPOINT_CHANNEL },
    events,
    (t, e) => projection.apply(t, e),
    readFrom,
  );

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
        const { rows } = await tx.query<{ locked: boolean }>(
          'SELECT pg_try_advisory_xact_lock($1) AS locked',
          [lockKey(projection.name)],
        );
        if (!rows[0].locked) throw new Standby();
        return applyBatch(tx, projection, mine, readFrom);
      });
      this.#positions.set(projection.name, position);
      this.events.emit('checkpoint', projection.name, position);
      return 'applied';
    } catch (error) {
      this.#positions.set(projection.name, undefined);
      if (!(error instanceof Standby))
        this.#log.error({ err: error, projection: projection.name }, 'projection batch failed');
      return 'blocked';
    }
  }

  start(): void {
    this.#subscription ??= this.#store.subscribe(
      { from: () => this.#from(), batchSize: 500 },
      async (events) => {
        const outcomes = new Set<string>();
        for (const projection of this.projections) outcomes.add(await this.#applyTo(projection, events));
        // Only blocked ones had work (standing by, or failing): back off before reading the batch again.
        if (outcomes.has('blocked') && !outcomes.has('applied')) throw new Standby();
      },
    );
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
