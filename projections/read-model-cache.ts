import type { ProjectionWaiter } from './waiter.ts';

/** A cached answer is read again after this long even without a change notice (a lost NOTIFY heals). */
const MAX_AGE_MS = 10_000;
/** Past this many entries the cache starts over, so that many distinct keys cannot grow it without end. */
const MAX_ENTRIES = 10_000;

/**
 * Look-ups on the send path (API keys, sending domains, short suppression lists) answered from memory until the
 * projection that serves them changes. The cache empties itself when that projection applies events of its
 * types: in this process at once, before the change's own request gets its answer (read-your-writes holds); in
 * other processes when the checkpoint's NOTIFY arrives, a few milliseconds later. Concurrent misses of one key
 * share one load.
 */
export class ReadModelCache {
  readonly #entries = new Map<string, { value: Promise<unknown>; at: number }>();
  readonly #keepNull: boolean;
  readonly #maxEntries: number;

  /** `maxEntries`: for caches of big values (fewer of them fit). */
  constructor(
    waiter: Pick<ProjectionWaiter, 'onChange'>,
    projection: string,
    options: { keepNull?: boolean; maxEntries?: number } = {},
  ) {
    this.#keepNull = options.keepNull ?? true;
    this.#maxEntries = options.maxEntries ?? MAX_ENTRIES;
    waiter.onChange(projection, () => this.#entries.clear());
  }

  get<T>(key: string, load: () => Promise<T>): Promise<T> {
    const now = Date.now();
    const hit = this.#entries.get(key);
    if (hit && now - hit.at < MAX_AGE_MS) return hit.value as Promise<T>;
    if (this.#entries.size >= this.#maxEntries) this.#entries.clear();
    const entry = { value: load() as Promise<unknown>, at: now };
    this.#entries.set(key, entry);
    const forget = () => {
      if (this.#entries.get(key) === entry) this.#entries.delete(key);
    };
    entry.value.then((v) => {
      if (v === null && !this.#keepNull) forget();
    }, forget);
    return entry.value as Promise<T>;
  }
}
