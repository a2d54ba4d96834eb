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
  readonly #parked: ParkedRetries;
  #subscription?: Subscription;
  #retryTimer?: NodeJS.Timeout;

  /**
   * The checkpoint as the last batch left it (consume answers with it, moved by this process or, when another one
   * got there first, by that one), so following the log needs no read of it per batch; unknown after a failure.
   */
  #known?: Position;

  /**
   * `handle` gets each batch of the log that is new to this consumer, in order, in the transaction that moves its
   * checkpoint; `prepare`, if given, gets each batch read from the log first, outside any transaction.
   */
  constructor(
    o: { name: string; db: Database; store: EventStore; log: Logger; prepare?: BatchPreparation },
    handle: BatchHandler,
  ) {
    this.name = o.name;
    this.#db = o.db;
    this.#store = o.store;
    this.#log = o.log;
    this.#handle = handle;
    this.#prepare = o.prepare;
    this.#parked = parkedRetries(o.db, this.#checkpoint, handle, o.log);
  }

  checkpoint(): Promise<Position> {
    return readCheckpoint(this.#db, this.#checkpoint.table, this.name);
  }

  async #apply(events: StoredEvent[]): Promise<void> {
    this.#known = undefined;
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
  }
}
