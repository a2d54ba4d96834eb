import type { Database, Transaction } from '../platform/db/database.ts';
import { consume, parkedRetries, readCheckpoint } from '../platform/eventstore/checkpoints.ts';
import { PARKED_RETRY_MS } from '../platform/eventstore/parked-events.ts';
import type { ParkedRetries } from '../platform/eventstore/parked-retries.ts';
import type { EventStore, Position, StoredEvent, Subscription } from '../platform/eventstore/types.ts';
import type { Logger } from '../platform/logger.ts';

export type BatchHandler = (tx: Transaction, events: StoredEvent[]) => Promise<void>;

/** Work on a batch before its transaction opens: reads of the store, which would hold the transaction open. */
export type BatchPreparation = (events: StoredEvent[]) => Promise<void>;

/**
 * A checkpoint left behind by batches the consumer had nothing to do with is written after this long: a restart
 * reads at most this much of the log again, for nothing.
 */
const SKIPPED_CHECKPOINT_MS = 1000;

/**
 * Feeds a process manager's own work tables (due lists, job queues) from the log. Each batch is applied in
 * one transaction with the checkpoint row locked FOR UPDATE, so several processes may run the same consumer:
 * a batch another one already applied is skipped, and a crash replays at most one batch (handlers upsert).
 * Process managers are never rebuilt: replaying them from the start would send email again.
 */
export class LogConsumer {
  readonly name: string;
  readonly #db: Database;
  readonly #store: EventStore;
  readonly #log: Logger;
  readonly #handle: BatchHandler;
  readonly #prepare?: BatchPreparation;
  readonly #acts?: (event: StoredEvent) => boolean;
  readonly #parked: ParkedRetries;
  #subscription?: Subscription;
  #retryTimer?: NodeJS.Timeout;

  /**
   * The checkpoint as the last batch left it (consume answers with it, moved by this process or, when another one
   * got there first, by that one), so following the log needs no read of it per batch; unknown after a failure.
   */
  #known?: Position;

  /** The last event of batches skipped since the checkpoint was last written, and the timer that writes it. */
  #skipped?: StoredEvent;
  #skippedTimer?: NodeJS.Timeout;

  /**
   * `handle` gets each batch of the log that is new to this consumer, in order, in the transaction that moves its
   * checkpoint; `prepare`, if given, gets each batch read from the log first, outside any transaction. `acts`, if
   * given, tells the events `handle` does something with: a live batch without any costs no transaction (and
   * wakes no worker), its checkpoint is written with the next batch or SKIPPED_CHECKPOINT_MS later. Every event a
   * consumer follows wakes every consumer, and most have nothing to do with most events.
   */
  constructor(
    o: {
      name: string;
      db: Database;
      store: EventStore;
      log: Logger;
      prepare?: BatchPreparation;
      acts?: (event: StoredEvent) => boolean;
    },
    handle: BatchHandler,
  ) {
    this.name = o.name;
    this.#db = o.db;
    this.#store = o.store;
    this.#log = o.log;
    this.#handle = handle;
    this.#prepare = o.prepare;
    this.#acts = o.acts;
    this.#parked = parkedRetries(o.db, this.#checkpoint, handle, o.log);
  }

  checkpoint(): Promise<Position> {
    return readCheckpoint(this.#db, this.#checkpoint.table, this.name);
  }

  /** A live batch the consumer has nothing to do with: the checkpoint moves in memory, and later on disk. */
  #skip(events: StoredEvent[]): boolean {
    if (this.#acts === undefined || events.some(this.#acts)) return false;
    this.#known = events[events.length - 1].position;
    this.#skipped = events[events.length - 1];
    this.#skippedTimer ??= setTimeout(() => void this.#writeSkipped(), SKIPPED_CHECKPOINT_MS).unref();
    return true;
  }

  /** Moves the checkpoint past the skipped batches (an applied batch since then may have moved it further). */
  async #writeSkipped(): Promise<void> {
    this.#skippedTimer = undefined;
    const last = this.#skipped;
    this.#skipped = undefined;
    if (!last) return;
    await consume(this.#db, this.#checkpoint, [last], async () => {}, { log: this.#log }).catch((err) =>
      this.#log.warn({ err, consumer: this.name }, 'checkpoint after skipped batches not written'),
    );
  }

  async #apply(events: StoredEvent[]): Promise<void> {
    this.#known = undefined;
    this.#skipped = undefined;
    await this.#prepare?.(events);
    this.#known = await consume(this.#db, this.#checkpoint, events, this.#handle, { log: this.#log });
  }

  get #checkpoint() {
    return { table: 'process_checkpoints' as const, name: this.name };
  }

  /** Retries this consumer's parked streams that are due (parked-retries.ts); runs every PARKED_RETRY_MS. */
  retryParked(): Promise<number> {
    return this.#parked.retry();
  }

  /** Live: follows the log in the background. `onBatch` runs after each committed batch (to wake a worker). */
  start(onBatch?: () => void): void {
    this.#retryTimer ??= setInterval(
      () =>
        void this.retryParked().then(
          (applied) => applied > 0 && onBatch?.(),
          (err) => this.#log.error({ err, consumer: this.name }, 'retry of parked events failed'),
        ),
      PARKED_RETRY_MS,
    ).unref();
    this.#subscription ??= this.#store.subscribe(
      { from: async () => this.#known ?? this.checkpoint(), batchSize: 500 },
      async (events) => {
        try {
          if (this.#skip(events)) return;
          await this.#apply(events);
        } catch (err) {
          this.#log.error({ err, consumer: this.name }, 'process consumer batch failed');
          throw err;
        }
        onBatch?.();
      },
    );
  }

  /**
   * Applies everything committed so far (a process manager's `runOnce()` starts with it), including events
   * an older transaction elsewhere still holds back from readers: it waits, briefly, until they are visible.
   */
  async catchUp(timeoutMs = 10_000): Promise<void> {
    const target = await this.#store.headPosition({ committed: true });
    const deadline = Date.now() + timeoutMs;
    while (true) {
      const from = await this.checkpoint();
      if (from >= target) return;
      const events = await this.#store.readAll({ from, limit: 500 });
      if (events.length > 0) await this.#apply(events);
      else if (Date.now() > deadline)
        throw new Error(`${this.name}: events up to ${target} never became visible`);
      else await new Promise((r) => setTimeout(r, 5));
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.#retryTimer);
    this.#retryTimer = undefined;
    await this.#subscription?.stop();
    this.#subscription = undefined;
    clearTimeout(this.#skippedTimer);
    await this.#writeSkipped();
  }
}
