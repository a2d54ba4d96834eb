/**
 * A Map that holds at most `max` entries, for caches: a new key when it is full drops the least recently used
 * entry (read or written), so a burst of one-off keys can neither grow memory without bound nor empty the cache.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  readonly max: number;
  /** The key used last: while it is in the map, it is its last entry, so reading it again moves nothing. */
  #newest: K | undefined;

  constructor(max: number) {
    super();
    this.max = max;
  }

  override get(key: K): V | undefined {
    const value = super.get(key);
    // Re-inserted, it moves to the end: the Map's order is the order of use.
    if (value !== undefined && key !== this.#newest) {
      super.delete(key);
      super.set(key, value);
      this.#newest = key;
    }
    return value;
  }

  override set(key: K, value: V): this {
    if (super.has(key)) super.delete(key);
    else if (this.size >= this.max) super.delete(this.keys().next().value as K);
    this.#newest = key;
    return super.set(key, value);
  }
}
