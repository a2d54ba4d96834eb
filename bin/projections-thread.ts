import { EventEmitter } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { Position } from '../platform/eventstore/types.ts';
import type { LogFormat, Logger } from '../platform/logger.ts';
import type { Projection } from '../projections/projection.ts';

/** Messages to the runner's thread: calls, each answered with `done`, and wake-ups. */
export type ToRunner = { type: 'caughtUp' | 'stop'; id: number } | { type: 'wake'; position: Position };
type FromRunner =
  | { type: 'ready' }
  | { type: 'changed'; name: string }
  | { type: 'checkpoint'; name: string; position: string }
  | { type: 'done'; id: number };

/**
 * A thread that died is started again after this long, doubled for each death in a row (up to the last) while
 * the threads live shorter than STABLE_MS: a thread that cannot run yet (its database away) is not started in a
 * tight loop.
 */
const RESTART_DELAY_MS = 1000;
const RESTART_DELAY_MAX_MS = 30_000;
const STABLE_MS = 10_000;

/** The thread's name, as the OS shows it (at most 15 characters). */
export const RUNNER_THREAD_NAME = 'projections';

/**
 * The projection runner in a worker thread of its own, for the event store on PostgreSQL. A request waiting for
 * its write to reach a read model used to wait, at each of the runner's dozen awaits (log read, connection, three
 * round trips, wake-up), for its turn behind the HTTP work of every other
 * request on the main event loop; in a thread of its own the runner's awaits do not queue, and building its rows
 * does not take the main thread's time. The main thread sees the same surface as a `ProjectionRunner`: `events`
 * ('changed', 'checkpoint'), `start`, `stop`, `running`, `caughtUp`. The thread's reader is woken by the
 * store's NOTIFY, as another process's would be: it gathers the appends of WAKE_AFTER_MS, where waking it for
 * each append (by message) made it read and apply the log in many small batches, at a cost to the rest of the
 * process (delivery 15% slower in `bench:send`). A request waiting for its write (`wake`) does not wait for the
 * NOTIFY: it wakes the thread at once, and at most one wake-up is on its way until the thread reports a batch.
 */
interface ThreadOptions {
  databaseUrl: string;
  pollMs: number;
  /** The thread's store hears of appends this much later, sharing the wake-up (notifier.ts). */
  wakeAfterMs: number;
  /** The thread's pool is no larger than the process's own (DATABASE_POOL_SIZE). */
  poolSize: number;
  log: Logger;
  logFormat: LogFormat;
}

export class ThreadedProjectionRunner {
  readonly events = new EventEmitter();
  readonly projections: Projection[];
  readonly #options: ThreadOptions;
  readonly #calls = new Map<number, () => void>();
  #nextCall = 0;
  #worker?: Worker;
  #running = false;
  #stopping = false;
  #wakeSent = false;
  /** Deaths in a row of threads that lived shorter than STABLE_MS. */
  #restarts = 0;

  constructor(projections: Projection[], options: ThreadOptions) {
    this.projections = projections;
    this.#options = options;
    this.events.setMaxListeners(0);
  }

  /** Resolves once the thread's runner has started. */
  start(): Promise<void> {
    if (this.#worker) return Promise.resolve();
    this.#stopping = false;
    return this.#spawn();
  }

  #spawn(): Promise<void> {
    const { databaseUrl, pollMs, wakeAfterMs, poolSize, log, logFormat } = this.#options;
    const worker = new Worker(new URL('./projections.worker.ts', import.meta.url), {
      workerData: { databaseUrl, pollMs, wakeAfterMs, poolSize, logLevel: log.level, logFormat },
      name: RUNNER_THREAD_NAME,
    });
    this.#worker = worker;
    const spawnedAt = Date.now();
    const started = new Promise<void>((resolve, reject) => {
      worker.on('message', (m: FromRunner) => {
        if (m.type === 'checkpoint') {
          this.#wakeSent = false;
          this.events.emit('checkpoint', m.name, m.position);
        } else if (m.type === 'changed') this.events.emit('changed', m.name);
        else if (m.type === 'done') this.#answer(m.id);
        else {
          this.#running = true;
          resolve();
        }
      });
      worker.once('error', (error) => {
        log.error({ err: error }, 'projection runner thread failed');
        reject(error);
      });
    });
    worker.once('exit', () => {
      this.#running = false;
      for (const id of [...this.#calls.keys()]) this.#answer(id);
      // A thread that died on its own is started again: the runner resumes from its checkpoints.
      if (!this.#stopping && this.#worker === worker) {
        this.#restarts = Date.now() - spawnedAt >= STABLE_MS ? 0 : this.#restarts + 1;
        const delay = Math.min(RESTART_DELAY_MAX_MS, RESTART_DELAY_MS * 2 ** Math.max(0, this.#restarts - 1));
        setTimeout(() => {
          if (!this.#stopping && this.#worker === worker) this.#spawn().catch(() => {});
        }, delay).unref();
      }
    });
    return started;
  }

  get running(): boolean {
    return this.#running;
  }

  /** The current thread (its `threadId` for diagnostics). */
  get thread(): Worker | undefined {
    return this.#worker;
  }

  /** Has the thread read the log now: a request waits for a write (at `position`) committed in this process. */
  wake(position: Position): void {
    if (this.#wakeSent || !this.#running) return;
    this.#wakeSent = true;
    this.#worker!.postMessage({ type: 'wake', position } satisfies ToRunner);
  }

  /** Resolves once every projection has applied everything committed before the call. */
  caughtUp(): Promise<void> {
    return this.#call('caughtUp');
  }

  async stop(): Promise<void> {
    const worker = this.#worker;
    if (!worker) return;
    this.#stopping = true;
    await this.#call('stop');
    await worker.terminate();
    this.#worker = undefined;
  }

  #call(type: 'caughtUp' | 'stop'): Promise<void> {
    if (!this.#running || !this.#worker) return Promise.resolve();
    const id = this.#nextCall++;
    return new Promise((resolve) => {
      this.#calls.set(id, resolve);
      this.#worker!.postMessage({ type, id } satisfies ToRunner);
    });
  }

  #answer(id: number) {
    this.#calls.get(id)?.();
    this.#calls.delete(id);
  }
}
