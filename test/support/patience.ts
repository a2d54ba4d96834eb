/**
 * How long a test waits for a condition before it fails. A passing test goes on as soon as its condition
 * holds, so the length costs it nothing; it is generous because on a loaded machine (both cores busy with
 * other work) the same steps take many times as long as on a quiet one. Tests wait for conditions with it,
 * never for a fixed time. It stays well below vitest's testTimeout, so that a failure names the condition.
 */
export const PATIENCE_MS = 60_000;

/** Options of `vi.waitFor` (and `expect.poll`, whose default they are in vitest.config.ts): PATIENCE_MS. */
export const PATIENCE = { timeout: PATIENCE_MS, interval: 50 };

/** `read()` once `check` holds of it, read again every 50 ms for PATIENCE_MS; then it fails. */
export async function until<T>(read: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  for (const end = Date.now() + PATIENCE_MS; Date.now() < end; ) {
    const value = await read();
    if (check(value)) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`never got there in ${PATIENCE_MS / 1000} s`);
}
