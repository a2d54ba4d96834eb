/**
 * `fn` of each item, at most `limit` at a time, the results in the items' order (errors as `Promise.all`'s):
 * work that would queue hundreds of statements at once leaves the pool's other connections to other work.
 */
export async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>) {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
