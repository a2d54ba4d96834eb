import { describe, expect, it, vi } from 'vitest';
import { Batcher } from '../../platform/batcher.ts';
import { PATIENCE } from '../support/patience.ts';

describe('Batcher', () => {
  it('puts calls of one tick in one batch, in order, and settles each with its own result', async () => {
    const batches: number[][] = [];
    const b = new Batcher<number, number>({
      run: async (items) => {
        batches.push(items);
        return items.map((i) => (i === 3 ? new Error('three') : i * 10));
      },
    });
    const results = await Promise.allSettled([1, 2, 3, 4].map((i) => b.add(i)));
    expect(batches).toEqual([[1, 2, 3, 4]]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([
      10,
      20,
      'three',
      40,
    ]);
  });

  it('runs at most maxInFlight batches; calls made meanwhile wait and go together', async () => {
    const batches: number[][] = [];
    const releases: (() => void)[] = [];
    const b = new Batcher<number, number>({
      maxInFlight: 1,
      run: async (items) => {
        batches.push(items);
        await new Promise<void>((r) => releases.push(r));
        return items;
      },
    });
    const first = b.add(1);
    await new Promise((r) => setImmediate(r));
    const rest = [2, 3, 4].map((i) => b.add(i));
    await new Promise((r) => setImmediate(r));
    expect(batches).toEqual([[1]]);
    releases[0]();
    await first;
    await new Promise((r) => setImmediate(r));
    expect(batches).toEqual([[1], [2, 3, 4]]);
    releases[1]();
    expect(await Promise.all(rest)).toEqual([2, 3, 4]);
  });

  it('with nextAfterMs, starts a second batch only beside one held up that long', async () => {
    const batches: number[][] = [];
    const releases: (() => void)[] = [];
    const b = new Batcher<number, number>({
      maxInFlight: 2,
      nextAfterMs: 200,
      run: async (items) => {
        batches.push(items);
        await new Promise<void>((r) => releases.push(r));
        return items;
      },
    });
    const startedAt = performance.now();
    const first = b.add(1);
    await new Promise((r) => setImmediate(r));
    const rest = [2, 3].map((i) => b.add(i));
    await new Promise((r) => setImmediate(r));
    expect(batches).toEqual([[1]]);
    // The first is held up: the calls made meanwhile start beside it once it has run 200 ms, not sooner.
    await vi.waitFor(() => expect(batches).toEqual([[1], [2, 3]]), PATIENCE);
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(200);
    const fourth = b.add(4);
    await new Promise((r) => setImmediate(r));
    expect(batches).toHaveLength(2); // two in flight: the most
    releases[0]();
    expect(await first).toBe(1);
    await vi.waitFor(() => expect(batches).toEqual([[1], [2, 3], [4]]), PATIENCE);
    releases[1]();
    releases[2]();
    expect(await Promise.all([...rest, fourth])).toEqual([2, 3, 4]);
  });

  it('keeps items with the same key, and weight beyond the maximum, for later batches', async () => {
    const batches: string[][] = [];
    const b = new Batcher<string, string>({
      key: (s) => s[0],
      maxWeight: 3,
      maxInFlight: 1,
      run: async (items) => {
        batches.push(items);
        return items;
      },
    });
    await Promise.all(['a1', 'b1', 'a2', 'c1', 'd1', 'a3'].map((s) => b.add(s)));
    expect(batches).toEqual([['a1', 'b1', 'c1'], ['a2', 'd1'], ['a3']]);
  });

  it('rejects every item of a batch that failed as a whole, and goes on with the next', async () => {
    let calls = 0;
    const b = new Batcher<number, number>({
      run: async (items) => {
        if (calls++ === 0) throw new Error('connection lost');
        return items;
      },
    });
    const failed = await Promise.allSettled([b.add(1), b.add(2)]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(await b.add(3)).toBe(3);
  });
});
