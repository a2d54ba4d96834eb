import { Worker } from 'node:worker_threads';

/**
 * A delivery to send: number, endpoint (its lane), URL, webhook id, secrets to sign with, body, the service
 * clock's time (ms) when it was handed over, and how long (ms) its claim's lease still allows it to start.
 */
export type Request = [
  n: number,
  webhookId: string,
  url: string,
  id: string,
  secrets: string[],
  body: string,
  now: number,
  leaseLeftMs: number,
];
/**
 * Its outcome: number, status, Retry-After, excerpt, error, latency (ms), and the service clock's time (ms) when
 * it was sent: NOT_SENT when its lease ran out while it waited, null when unknown (the thread died).
 */
export type Result = [
  n: number,
  status: number | null,
  retryAfter: string | null,
  excerpt: string | null,
  error: string | null,
  latencyMs: number,
  at: number | null,
];
export const NOT_SENT = -1;

/** The thread's name, as the OS shows it (at most 15 characters): CPU figures are read by it. */
export const SENDER_THREAD_NAME = 'webhook-sender';

export interface SenderOptions {
  allowPrivateNetworks: boolean;
  timeoutMs: number;
  /** Requests in flight at most, in all. */
  concurrency: number;
  /** Requests in flight at most to one endpoint (also its connections). */
  perEndpoint: number;
}

/**
 * Signing and HTTP run in a worker thread of their own (sender.worker.ts), so that they and the rest of the
 * process (the fan-out, claims and outcomes, the API) use two cores. The thread holds the deliveries it is given
 * in per-endpoint lanes and starts the next one as soon as a request slot frees, without a round trip to this
 * thread. Deliveries handed over together go in one message, and outcomes come back the same way. Started by
 * the dispatcher's start() or on first use; a thread that dies fails what it held (the next send starts another).
 */
export class SenderThread {
  readonly #options: SenderOptions;
  readonly #onResults: (results: Result[]) => void;
  /** Numbers of the deliveries the thread holds, to fail them if it dies. */
  readonly #held = new Set<number>();
  #worker?: Worker;
  #batch: Request[] = [];
  ready: Promise<void> = Promise.resolve();

  constructor(options: SenderOptions, onResults: (results: Result[]) => void) {
    this.#options = options;
    this.#onResults = onResults;
  }

  send(request: Request): void {
    if (this.#batch.length === 0) setImmediate(this.#post); // what one wake-up hands over goes together
    this.#batch.push(request);
    this.#held.add(request[0]);
  }

  #post = () => {
    const worker = this.start();
    worker.ref(); // outcomes are awaited: keep the process up for them
    worker.postMessage(this.#batch);
    this.#batch = [];
  };

  /** Starts the thread, unless it runs; `ready` resolves once it has loaded. */
  start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(new URL('./sender.worker.ts', import.meta.url), {
      workerData: this.#options,
      name: SENDER_THREAD_NAME,
    });
    this.#worker = worker;
    this.ready = new Promise((resolve) => {
      worker.once('message', () => resolve());
      worker.once('exit', () => resolve());
    });
    worker.on('message', (message: Result[] | { unsent: number[] } | 'ready') => {
      if (message === 'ready' || !Array.isArray(message)) return;
      for (const result of message) this.#held.delete(result[0]);
      if (this.#held.size === 0) worker.unref();
      this.#onResults(message);
    });
    let failure = '';
    worker.on('error', (error) => {
      failure = `: ${error.message}`;
    });
    worker.on('exit', () => {
      if (this.#worker === worker) this.#worker = undefined;
      const error = `the sender thread stopped${failure}`;
      const lost: Result[] = [...this.#held].map((n) => [n, null, null, null, error, 0, null]);
      this.#held.clear();
      if (lost.length > 0) this.#onResults(lost);
    });
    worker.unref();
    return worker;
  }

  /**
   * Stops the thread once its requests in flight are answered (their outcomes come first), and returns the
   * numbers of the deliveries it had not started.
   */
  async close(): Promise<number[]> {
    if (this.#batch.length > 0) this.#post();
    const worker = this.#worker;
    if (!worker) return [];
    let unsent: number[] = [];
    worker.on('message', (message) => {
      if (message && !Array.isArray(message) && typeof message === 'object') {
        unsent = message.unsent;
        for (const n of unsent) this.#held.delete(n);
      }
    });
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.ref();
    worker.postMessage('close');
    await exited;
    return unsent;
  }
}
