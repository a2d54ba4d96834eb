/**
 * Batches of writes that share a commit (group commit) run one at a time while they are quick: the writes made while
 * one commits gather for the next. A second batch in flight from the start split the load into twice as many
 * batches and round trips: the relay paid 30 % more CPU a message and the MX 16 % (bench/README.md, 2026-11-29).
 * A batch held up (a row lock of another writer, a slow disk) lets one more start after `nextAfterMs`, so that it
 * does not hold every write of the process behind it.
 */
export const GROUP_COMMIT = { maxInFlight: 2, nextAfterMs: 50 } as const;

/**
 * Gathers concurrent calls into batches, so that many requests in flight share one round trip to the database
 * (appends share one INSERT and one commit, look-ups one SELECT). Calls made in the same run of code go
 * together; while `maxInFlight` batches are running, further calls wait and go in the next one. A lone call
 * pays no delay.
 */
export interface BatcherOptions<I> {
  /** Runs one batch; returns one result per item, in order, or an Error for an item that failed alone. */
  run: (items: I[]) => Promise<unknown[]>;
  /** Batches running at once. */
  maxInFlight?: number;
  /**
   * With it, a batch beyond the first in flight starts only once the last one started has run this long: one at a
   * time while batches are quick, and another one beside a batch that is held up.
   */
  nextAfterMs?: number;
  /** Weight of a batch before it is closed (by default each item weighs 1). */
  maxWeight?: number;
  weight?: (item: I) => number;
  /** Items with the same key never share a batch: a second one waits for the next. */
  key?: (item: I) => string;
}

interface Pending<I> {
  item: I;
  resolve: (value: any) => void;
  reject: (error: unknown) => void;
}

export class Batcher<I, O> {
  readonly #options: Required<Omit<BatcherOptions<I>, 'key' | 'nextAfterMs'>> &
    Pick<BatcherOptions<I>, 'key' | 'nextAfterMs'>;
  #queue: Pending<I>[] = [];
  #inFlight = 0;
  #scheduled = false;
  /** When the last batch started (performance.now()), and the timer that starts one more once it is held up. */
  #lastStart = 0;
  #heldUp?: NodeJS.Timeout;

  constructor(options: BatcherOptions<I>) {
    this.#options = { maxInFlight: 2, maxWeight: 500, weight: () => 1, ...options };
  }

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      this.#schedule();
    });
  }

  /** Whether a batch may start now; when only `nextAfterMs` stands in the way, a timer asks again then. */
  #mayStart(): boolean {
    const { maxInFlight, nextAfterMs } = this.#options;
    if (this.#queue.length === 0 || this.#inFlight >= maxInFlight) return false;
    const wait =
      this.#inFlight === 0 || nextAfterMs === undefined
        ? 0
        : this.#lastStart + nextAfterMs - performance.now();
    if (wait <= 0) return true;
    this.#heldUp ??= setTimeout(() => {
      this.#heldUp = undefined;
      this.#next();
    }, wait).unref();
    return false;
  }

  #schedule() {
    if (this.#scheduled || !this.#mayStart()) return;
    this.#scheduled = true;
    // Calls made in the same run of code (e.g. the items of one batch request) join before the batch is closed;
    // under load, calls also gather while earlier batches are in flight.
    queueMicrotask(() => {
      this.#scheduled = false;
      this.#next();
    });
  }

  #take(): Pending<I>[] {
    const { maxWeight, weight, key } = this.#options;
    const taken: Pending<I>[] = [];
    const keys = new Set<string>();
    const left: Pending<I>[] = [];
    let total = 0;
    for (const p of this.#queue) {
      const w = weight(p.item);
      const k = key?.(p.item);
      if ((taken.length > 0 && total + w > maxWeight) || (k !== undefined && keys.has(k))) left.push(p);
      else {
        taken.push(p);
        if (k !== undefined) keys.add(k);
        total += w;
      }
    }
    this.#queue = left;
    return taken;
  }

  #next() {
    while (this.#mayStart()) {
      const batch = this.#take();
      this.#inFlight++;
      this.#lastStart = performance.now();
      this.#options
        .run(batch.map((p) => p.item))
        .then(
          (results) => {
            batch.forEach((p, i) => {
              if (results[i] instanceof Error) p.reject(results[i]);
              else p.resolve(results[i]);
            });
          },
          (error) => {
            for (const p of batch) p.reject(error);
          },
        )
        .finally(() => {
          this.#inFlight--;
          this.#next();
        });
    }
  }
}
