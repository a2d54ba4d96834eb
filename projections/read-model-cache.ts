import { BoundedMap } from '../platform/bounded-map.ts';
import type { SharedLookup } from '../platform/services.ts';
import type { ProjectionWaiter } from './waiter.ts';

/** A cached answer is read again after this long even without a change notice (a lost NOTIFY heals). */
const MAX_AGE_MS = 10_000;
/** At most this many entries (the least recently used go first), so that many distinct keys cannot grow it without end. */
const MAX_ENTRIES = 10_000;

/**
 * Look-ups on the send path (API keys, sending domains, short suppression lists) answered from memory until the
 * projection that serves them changes. The cache empties itself when that projection applies events of its
 * types: in this process at once, before the change's own request gets its answer (read-your-writes holds); in
 * other processes when the checkpoint's NOTIFY arrives, a few milliseconds later. While the waiter cannot hear
 * those NOTIFYs (its LISTEN connection is lost), nothing is answered from memory: every look-up reads the
 * database, as a change made meanwhile would go unannounced (the waiter empties the cache once it hears again).
 * Concurrent misses of one key share one load.
 */
export class ReadModelCache<K extends unknown[], V> implements SharedLookup<K, V> {
  readonly #entries: BoundedMap<string, { value: Promise<V>; at: number; maxAge: number; pending: boolean }>;
  readonly #waiter: Pick<ProjectionWaiter, 'onChange'> & { readonly hearing?: boolean };
  readonly #key: (...key: K) => string;
  readonly #load: (...key: K) => Promise<V>;
  readonly #keepNull: boolean;
  readonly #nullMaxAgeMs: number;

  /**
   * `key`: the entry's name for a look-up's arguments; `load`: the read-model query. `maxEntries`: for caches of
   * big values (fewer of them fit). `nullMaxAgeMs`: a null answer ("not there") is read again after this long,
   * for look-ups where something may appear that no change notice has announced yet.
   */
  constructor(
    waiter: Pick<ProjectionWaiter, 'onChange'> & { readonly hearing?: boolean },
    projection: string,
    options: {
      key: (...key: K) => string;
      load: (...key: K) => Promise<V>;
      keepNull?: boolean;
      nullMaxAgeMs?: number;
      maxEntries?: number;
    },
  ) {
    this.#key = options.key;
    this.#load = options.load;
    this.#keepNull = options.keepNull ?? true;
    this.#nullMaxAgeMs = Math.min(options.nullMaxAgeMs ?? MAX_AGE_MS, MAX_AGE_MS);
    this.#entries = new BoundedMap(options.maxEntries ?? MAX_ENTRIES);
    this.#waiter = waiter;
    waiter.onChange(projection, () => this.#entries.clear());
  }

  get(...args: K): Promise<V> {
    const key = this.#key(...args);
    const now = Date.now();
    const hearing = this.#waiter.hearing ?? true;
    const hit = this.#entries.get(key);
    if (hit && (hit.pending || (hearing && now - hit.at < hit.maxAge))) return hit.value;
    const entry = { value: this.#load(...args), at: now, maxAge: MAX_AGE_MS, pending: true };
    this.#entries.set(key, entry);
    const forget = () => {
      if (this.#entries.get(key) === entry) this.#entries.delete(key);
    };
    entry.value.then((v) => {
      entry.pending = false;
      if (!hearing || (v === null && !this.#keepNull)) forget();
      else if (v === null) entry.maxAge = this.#nullMaxAgeMs;
    }, forget);
    return entry.value;
  }
}
