import { Worker } from 'node:worker_threads';
import type { SendOutcome } from './http-sender.ts';

/** A delivery to send: number, URL, webhook id, timestamp (seconds), secrets to sign with, body. */
export type Request = [
  n: number,
  url: string,
  id: string,
  timestamp: number,
  secrets: string[],
  body: string,
];
/** Its outcome: number, status, Retry-After, excerpt, error, latency (ms). */
export type Result = [
  n: number,
  status: number | null,
  retryAfter: string | null,
  excerpt: string | null,
  error: string | null,
  latencyMs: number,
];

export interface Sent {
  outcome: SendOutcome;
  latencyMs: number;
}

export interface SenderOptions {
  allowPrivateNetworks: boolean;
  timeoutMs: number;
  connectionsPerOrigin: number;
}

/**
 * Signing and HTTP run in a worker thread of their own (sender.worker.ts), so that they and the rest of the
 * process (the fan-out, claims and outcomes, the API) use two cores. Requests made together go over in one
 * message, and outcomes come back the same way. Started by the dispatcher's start() or on first use; a thread
 * that dies fails what it held (the next request starts another).
 */
export class SenderThread {
  readonly #options: SenderOptions;
  readonly #pending = new Map<number, (sent: Sent) => void>();
  #worker?: Worker;
  #next = 0;
  #batch: Request[] = [];
  ready: Promise<void> = Promise.resolve();

  constructor(options: SenderOptions) {
    this.#options = options;
  }

  send(url: string, id: string, timestamp: number, secrets: string[], body: string): Promise<Sent> {
    const n = this.#next++;
    if (this.#batch.length === 0) setImmediate(this.#post); // what one wake-up starts goes over together
    this.#batch.push([n, url, id, timestamp, secrets, body]);
    return new Promise((resolve) => this.#pending.set(n, resolve));
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
    const worker = new Worker(new URL('./sender.worker.ts', import.meta.url), { workerData: this.#options });
    this.#worker = worker;
    this.ready = new Promise((resolve) => {
      worker.once('message', () => resolve());
      worker.once('exit', () => resolve());
    });
    worker.on('message', (results: Result[] | 'ready') => {
      if (results === 'ready') return;
      for (const [n, status, retryAfter, excerpt, error, latencyMs] of results) {
        const resolve = this.#pending.get(n);
        this.#pending.delete(n);
        resolve?.({ outcome: { status, retryAfter: retryAfter ?? undefined, excerpt, error }, latencyMs });
      }
      if (this.#pending.size === 0) worker.unref();
    });
    let failure = '';
    worker.on('error', (error) => {
      failure = `: ${error.message}`;
    });
    worker.on('exit', () => {
      if (this.#worker === worker) this.#worker = undefined;
      const error = `the sender thread stopped${failure}`;
      for (const resolve of this.#pending.values())
        resolve({ outcome: { status: null, excerpt: null, error }, latencyMs: 0 });
      this.#pending.clear();
    });
    worker.unref();
    return worker;
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    if (!worker) return;
    this.#worker = undefined;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.ref();
    worker.postMessage('close');
    await exited;
  }
}
