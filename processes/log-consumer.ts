import type { Database, Transaction } from '../platform/db/database.ts';
import type { Migration } from '../platform/db/migrations.ts';
import { applyCheckpointed, checkpointTableSql } from '../platform/eventstore/checkpoints.ts';
import {
  type EventStore,
  type Position,
  START,
  type StoredEvent,
  type Subscription,
} from '../platform/eventstore/types.ts';
import type { Logger } from '../platform/logger.ts';

export const processCheckpointsMigrations: Migration[] = [
  {
    id: 'process-checkpoints-001',
    sql: checkpointTableSql('process_checkpoints'),
  },
];

export type BatchHandler = (tx: Transaction, events: StoredEvent[]) => Promise<void>;

/** A batch handler that handles the events one by one. */
export const eachEvent =
  (handle: (tx: Transaction, event: StoredEvent) => Promise<void>): BatchHandler =>
  async (tx, events) => {
    for (const event of events) await handle(tx, event);
  };

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
  #subscription?: Subscription;

  /** `handle` gets each batch of the log that is new to this consumer, in order (`eachEvent` for one at a time). */
  constructor(o: { name: string; db: Database; store: EventStore; log: Logger }, handle: BatchHandler) {
    this.name = o.name;
    this.#db = o.db;
    this.#store = o.store;
    this.#log = o.log;
    this.#handle = handle;
  }

  async checkpoint(): Promise<Position> {
    const { rows } = await this.#db.query<{ position: string }>(
      'SELECT position FROM process_checkpoints WHERE name = $1',
      [this.name],
    );
    return rows[0]?.position ?? START;
  }

  async #apply(events: StoredEvent[]): Promise<void> {
    await this.#db.transaction((tx) =>
      applyCheckpointed(tx, { table: 'process_checkpoints', name: this.name }, events, this.#handle),
    );
  }

  /** Live: follows the log in the background. `onBatch` runs after each committed batch (to wake a worker). */
  start(onBatch?: () => void): void {
    this.#subscription ??= this.#store.subscribe(
      { from: () => this.checkpoint(), batchSize: 500 },
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
   * Applies everything committed so far (tests and `runOnce()` drive process managers this way), including events
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
    await this.#subscription?.stop();
    this.#subscription = undefined;
  }
}

/**
 * The other half of a due-table process manager (scheduler, delivery, simulator): `work()` does what is due now;
 * it runs after each batch the consumer applied and on a timer (for times that come due without an event).
 * Runs never overlap: a call during a run shares it. Tests call `runOnce()` with the process stopped.
 */
export class DueWork {
  readonly #consumer: LogConsumer;
  readonly #work: () => Promise<number>;
  readonly #intervalMs: number;
  readonly #log: Logger;
  #timer?: NodeJS.Timeout;
  #running?: Promise<number>;

  constructor(o: { consumer: LogConsumer; work: () => Promise<number>; intervalMs: number; log: Logger }) {
    this.#consumer = o.consumer;
    this.#work = o.work;
    this.#intervalMs = o.intervalMs;
    this.#log = o.log;
  }

  start(): void {
    const run = () =>
      void this.runDue().catch((err) =>
        this.#log.error({ err, process: this.#consumer.name }, 'process run failed'),
      );
    this.#consumer.start(run);
    this.#timer = setInterval(run, this.#intervalMs);
    this.#timer.unref();
  }

  /** Catches up with the log, then does what is due. */
  async runOnce(): Promise<number> {
    await this.#consumer.catchUp();
    return this.runDue();
  }

  runDue(): Promise<number> {
    this.#running ??= this.#work().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running?.catch(() => {});
    await this.#consumer.stop();
  }
}
