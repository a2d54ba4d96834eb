import { EventEmitter } from 'node:events';
import type { Database, Queryable, Transaction } from '../platform/db/database.ts';
import {
  consume,
  LockTaken,
  parkedRetries,
  readCheckpoint as readStoredCheckpoint,
} from '../platform/eventstore/checkpoints.ts';
import { PARKED_RETRY_MS } from '../platform/eventstore/parked-events.ts';
import type { ParkedRetries } from '../platform/eventstore/parked-retries.ts';
import {
  type EventStore,
  isOneOf,
  type Position,
  START,
  type StoredEvent,
  type Subscription,
} from '../platform/eventstore/types.ts';
import type { Logger } from '../platform/logger.ts';
import { CHECKPOINT_CHANNEL, lockKey, type Projection } from './projection.ts';

class Standby extends Error {}

/** A checkpoint of events that concern none of a projection's types is written at most this often. */
const LAZY_CHECKPOINT_MS = 1000;

interface ProjectionState {
  /** Everything up to here is applied (or was none of the projection's business). */
  consumed: Position;
  /** The checkpoint as this process last wrote or read it. */
  stored: Position;
  storedAt: number;
}

/** Whether the events hold any the projection applies (then its read model may have changed). */
const touches = (projection: Projection, events: StoredEvent[]) =>
  !projection.types || events.some((e) => projection.types!.includes(e.type));

/** A projection's checkpoint. */
export const readCheckpoint = (q: Queryable, name: string): Promise<Position> =>
  readStoredCheckpoint(q, 'projection_checkpoints', name);

/** A projection's place in the log: its checkpoint, lock and channel. */
const checkpointOf = (
  projection: Projection,
  options: { live?: boolean; changed?: boolean; schema?: string },
) => ({
  table: 'projection_checkpoints' as const,
  name: projection.name,
  notify: CHECKPOINT_CHANNEL,
  changed: options.changed,
  ...(options.live && { tryLock: lockKey(projection.name) }),
  asyncCommit: true,
  schema: options.schema,
});

/** Hands a projection only the events of its types (`isOneOf`), which its handlers are typed for. */
export const handlerOf =
  (projection: Projection) =>
  async (tx: Transaction, events: StoredEvent[]): Promise<void> => {
    const { types } = projection;
    const mine = types ? events.filter((e) => isOneOf(e, types)) : events;
    if (mine.length === 0) return;
    if (projection.applyBatch) return projection.applyBatch(tx, mine);
    for (const event of mine) await projection.apply(tx, event);
  };

/**
 * Applies a batch to a projection and moves its checkpoint in one transaction (see `consume`: an event the
 * projection fails on is parked, never holding the others back). `live`: holding the projection's advisory lock
 * (`LockTaken` when another process holds it); a rebuild's batches go to tables of their own (`schema`) and need
 * none. A read model is rebuilt from the log, so its commit need not wait for the disk: a crash loses at most the
 * last batches together with their checkpoint, and they are applied again.
 */
export const applyBatch = (
  db: Database,
  projection: Projection,
  events: StoredEvent[],
  options: { readFrom?: Position; live?: boolean; changed?: boolean; schema?: string; log: Logger },
) =>
  consume(
    db,
    checkpointOf(projection, { ...options, changed: options.changed ?? touches(projection, events) }),
    events,
    handlerOf(projection),
    options,
  );

/**
 * Keeps every projection's read model up to date from one subscription: each batch of the log is read (and its
 * JSON parsed) once, then applied to all projections side by side, each in a transaction of its own, so one
 * projection's failure holds back only itself. Several processes may run the runner: each projection's transaction takes that
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
  #retryTimer?: NodeJS.Timeout;
  #retrying?: Promise<number>;
  /** Each projection's parked streams, retried from the due queue. */
  readonly #parked: Map<string, ParkedRetries>;
  readonly #state = new Map<string, ProjectionState>();
  /**
   * Emits `checkpoint` (name, position) after each batch a projection has consumed in this process, and before
   * it `changed` (name) when the batch held events of the projection's types.
   */
  readonly events = new EventEmitter();

  constructor(db: Database, store: EventStore, projections: Projection[], log: Logger) {
    this.#db = db;
    this.#store = store;
    this.projections = projections;
    this.#log = log;
    this.#parked = new Map(
      projections.map((p) => [
        p.name,
        parkedRetries(db, checkpointOf(p, { live: true, changed: true }), handlerOf(p), log),
      ]),
    );
    this.events.setMaxListeners(0);
  }

  /** Where the next batch must start: the position of the projection furthest behind. */
  async #from(): Promise<Position> {
    let from: Position | undefined;
    for (const p of this.projections) {
      let state = this.#state.get(p.name);
      if (!state) {
        const stored = await readCheckpoint(this.#db, p.name);
        state = { consumed: stored, stored, storedAt: Date.now() };
        this.#state.set(p.name, state);
      }
      if (from === undefined || state.consumed < from) from = state.consumed;
    }
    return from ?? START;
  }

  /** Applies the batch to one projection: `blocked` when another process holds it or it failed. */
  async #applyTo(projection: Projection, events: StoredEvent[]): Promise<'applied' | 'idle' | 'blocked'> {
    const state = this.#state.get(projection.name);
    if (!state) return 'blocked';
    const mine = events.filter((e) => e.position > state.consumed);
    if (mine.length === 0) return 'idle';
    // Nothing here for this projection: move on in memory, and write the checkpoint only now and then.
    const changed = touches(projection, mine);
    if (!changed && Date.now() - state.storedAt < LAZY_CHECKPOINT_MS) {
      state.consumed = mine[mine.length - 1].position;
      this.events.emit('checkpoint', projection.name, state.consumed);
      return 'idle';
    }
    try {
      // From the stored checkpoint: the events skipped in memory since were none of this projection's.
      const position = await applyBatch(this.#db, projection, mine, {
        readFrom: state.stored,
        live: true,
        changed,
        log: this.#log,
      });
      Object.assign(state, { consumed: position, stored: position, storedAt: Date.now() });
      if (changed) this.events.emit('changed', projection.name);
      this.events.emit('checkpoint', projection.name, position);
      return 'applied';
    } catch (error) {
      this.#state.delete(projection.name); // re-read the stored checkpoint before the next batch
      if (!(error instanceof LockTaken))
        this.#log.error({ err: error, projection: projection.name }, 'projection batch failed');
      return 'blocked';
    }
  }

  /**
   * Retries the parked events of every projection that are due; a projection that applied some has changed.
   * Runs every PARKED_RETRY_MS while the runner runs (tests call it directly).
   */
  retryParked(): Promise<number> {
    this.#retrying ??= (async () => {
      let applied = 0;
      for (const p of this.projections) {
        const n = await this.#parked.get(p.name)!.retry();
        if (n > 0) this.events.emit('changed', p.name);
        applied += n;
      }
      return applied;
    })().finally(() => {
      this.#retrying = undefined;
    });
    return this.#retrying;
  }

  start(): void {
    this.#retryTimer ??= setInterval(
      () => void this.retryParked().catch((err) => this.#log.error({ err }, 'retry of parked events failed')),
      PARKED_RETRY_MS,
    ).unref();
    this.#subscription ??= this.#store.subscribe(
      { from: () => this.#from(), batchSize: 500 },
      async (events) => {
        // Side by side, each on its own connection: one projection's transaction (say a checkpoint written
        // after a quiet second) does not delay the others, nor the requests waiting for them.
        const outcomes = new Set(await Promise.all(this.projections.map((p) => this.#applyTo(p, events))));
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
    clearInterval(this.#retryTimer);
    this.#retryTimer = undefined;
    await this.#retrying?.catch(() => {});
    await this.#subscription?.stop();
    this.#subscription = undefined;
  }
}
