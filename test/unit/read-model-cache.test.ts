import { afterEach, describe, expect, it, vi } from 'vitest';
import { ReadModelCache } from '../../projections/read-model-cache.ts';

/** Stands in for the waiter: `change(name)` is what a projection's applied batch (or its NOTIFY) does. */
function changeFeed() {
  const listeners = new Map<string, (() => void)[]>();
  return {
    onChange: (name: string, listener: () => void) =>
      listeners.set(name, [...(listeners.get(name) ?? []), listener]),
    change: (name: string) => {
      for (const l of listeners.get(name) ?? []) l();
    },
  };
}

/** A cache whose loader each `get` names, as the cases below read: the loader given at build time calls it. */
function cacheOf(
  feed: ReturnType<typeof changeFeed> & { hearing?: boolean },
  projection: string,
  options: { keepNull?: boolean; nullMaxAgeMs?: number } = {},
) {
  let next: () => Promise<unknown> = async () => undefined;
  const cache = new ReadModelCache<[string], unknown>(feed, projection, {
    ...options,
    key: (k) => k,
    load: () => next(),
  });
  return {
    get: (key: string, load: () => Promise<unknown>) => {
      next = load;
      return cache.get(key);
    },
  };
}

describe('ReadModelCache', () => {
  it('loads once, answers from memory, and loads again after its projection changed', async () => {
    const feed = changeFeed();
    const cache = cacheOf(feed, 'domains');
    let loads = 0;
    const load = async () => ++loads;
    expect(await Promise.all([cache.get('k', load), cache.get('k', load)])).toEqual([1, 1]);
    expect(await cache.get('k', load)).toBe(1);
    feed.change('api_keys'); // another projection: no effect
    expect(await cache.get('k', load)).toBe(1);
    feed.change('domains');
    expect(await cache.get('k', load)).toBe(2);
    expect(loads).toBe(2);
  });

  it('keeps no failed load, and no null when told so', async () => {
    const cache = cacheOf(changeFeed(), 'api_keys', { keepNull: false });
    await expect(cache.get('k', async () => Promise.reject(new Error('db down')))).rejects.toThrow('db down');
    expect(await cache.get('k', async () => null)).toBeNull();
    expect(await cache.get('k', async () => 'found')).toBe('found');
    expect(await cache.get('k', async () => 'other')).toBe('found');
  });

  it('keeps null by default (a domain that is not there is an answer too)', async () => {
    const cache = cacheOf(changeFeed(), 'domains');
    expect(await cache.get('k', async () => null)).toBeNull();
    expect(await cache.get('k', async () => 'late')).toBeNull();
  });

  it('answers nothing from memory while its change notices cannot be heard, and caches again once they can', async () => {
    const feed = { ...changeFeed(), hearing: true };
    const cache = cacheOf(feed, 'api_keys');
    expect(await cache.get('k', async () => 'before')).toBe('before');
    feed.hearing = false; // the LISTEN connection is lost: a change elsewhere would go unannounced
    expect(await cache.get('k', async () => 'deleted meanwhile')).toBe('deleted meanwhile');
    expect(await cache.get('k', async () => 'read again')).toBe('read again');
    feed.hearing = true; // in place again (the waiter empties the cache then)
    feed.change('api_keys');
    expect(await cache.get('k', async () => 'after')).toBe('after');
    expect(await cache.get('k', async () => 'not read')).toBe('after');
  });

  describe('a null kept for a short time (unknown API keys)', () => {
    afterEach(() => {
      vi.useRealTimers();
    });
    it('answers null from memory until its projection changes or nullMaxAgeMs passes; found values stay longer', async () => {
      vi.useFakeTimers({ toFake: ['Date'], now: 1_000_000 });
      const feed = changeFeed();
      const cache = cacheOf(feed, 'api_keys', { nullMaxAgeMs: 2000 });
      expect(await cache.get('k', async () => null)).toBeNull();
      expect(await cache.get('k', async () => 'created')).toBeNull();
      feed.change('api_keys');
      expect(await cache.get('k', async () => 'created')).toBe('created');
      expect(await cache.get('n', async () => null)).toBeNull();
      vi.setSystemTime(1_000_000 + 2000);
      expect(await cache.get('n', async () => 'created elsewhere')).toBe('created elsewhere');
      vi.setSystemTime(1_000_000 + 9000);
      expect(await cache.get('k', async () => 'other')).toBe('created');
    });
  });
});
