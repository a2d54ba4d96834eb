import type { Transaction } from '../platform/db/database.ts';
import type { StoredEvent } from '../platform/eventstore/types.ts';
import type { Services } from '../platform/services.ts';
import { LogConsumer } from './log-consumer.ts';

/** A long-running worker (process manager, scheduler, verifier) started and stopped with the service. */
export interface BackgroundProcess {
  readonly name: string;
  start(): void;
  /**
   * Does what is due now (after catching up with the log, for a process that follows it) and resolves with how
   * many items it did. Tests and tools drive a stopped process this way, moving a ManualClock in between.
   */
  runOnce(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * A process manager: `work()` does what is due now, every `everyMs` and, for a process that follows the log (one
 * that has a `consume` method), after each batch its log consumer applied. `consume` feeds the process's own work
 * tables in the consumer's transaction, with the checkpoint (log-consumer.ts). Runs never overlap.
 */
export abstract class ProcessManager implements BackgroundProcess {
  readonly name: string;
  readonly #everyMs: number;
  readonly #log: Services['log'];
  readonly #consumer?: LogConsumer;
  #timer?: NodeJS.Timeout;
  #running?: Promise<number>;
  #again = false;
  #stopping = new AbortController();

  constructor(services: Pick<Services, 'db' | 'store' | 'log'>, o: { name: string; everyMs: number }) {
    this.name = o.name;
    this.#everyMs = o.everyMs;
    this.#log = services.log;
    if (this.consume)
      this.#consumer = new LogConsumer(
        { ...services, name: o.name, ...(this.acts && { acts: (e) => this.acts!(e) }) },
        (tx, events) => this.consume!(tx, events),
      );
  }

  /** Applies a batch of the log to the process's work tables, in the transaction that moves its checkpoint. */
  protected consume?(tx: Transaction, events: StoredEvent[]): Promise<void>;

  /**
   * Whether `consume` does anything with the event; a process that says so has batches without such events
   * skipped (log-consumer.ts). `consume` must then leave every other event alone.
   */
  protected acts?(event: StoredEvent): boolean;

  /** Does what is due now; resolves with how many items it did. */
  protected abstract work(): Promise<number>;

  /**
   * A run was asked for while one goes on (after a batch of the log, `fromLog`; by the timer or the run itself): a
   * run that waits may look now.
   */
  protected woken?(fromLog: boolean): void;

  /** Aborts when stop() is called: work in hand finishes, nothing new starts (`DueQueue.drain` takes it). */
  protected get stopping(): AbortSignal {
    return this.#stopping.signal;
  }

  start(): void {
    const run = (fromLog: boolean) => () =>
      void this.#runDue(fromLog).catch((err) =>
        this.#log.error({ err, process: this.name }, 'process run failed'),
      );
    this.#consumer?.start(run(true));
    this.#timer ??= setInterval(run(false), this.#everyMs);
    this.#timer.unref();
  }

  async runOnce(): Promise<number> {
    await this.#consumer?.catchUp();
    return this.#runDue();
  }

  /** Work added by the run itself: the run looks again once done, rather than at the next tick. */
  protected workAgain(): void {
    void this.#runDue();
  }

  /** A call during a run shares it, and has it look again when done: what woke the call may have come too late for it. */
  #runDue(fromLog = false): Promise<number> {
    if (this.#running) {
      this.#again = true;
      this.woken?.(fromLog);
      return this.#running;
    }
    const run = async () => {
      let done = 0;
      do {
        this.#again = false;
        done += await this.work();
      } while (this.#again);
      return done;
    };
    this.#running = run().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#stopping.abort();
    await this.#running?.catch(() => {});
    await this.#consumer?.stop();
    this.#stopping = new AbortController();
  }
}

/**
 * Runs `act` on each item, one after the other; one item's trouble is logged by `onError` and skipped, never
 * stopping the rest. Returns how many succeeded.
 */
export async function forEachItem<T>(
  items: T[],
  act: (item: T) => Promise<unknown>,
  onError: (err: unknown, item: T) => void,
): Promise<number> {
  let done = 0;
  for (const item of items) {
    try {
      await act(item);
      done++;
    } catch (err) {
      onError(err, item);
    }
  }
  return done;
}
