/**
 * How long a test waits for a condition before it fails. A passing test goes on as soon as its condition
 * holds, so the length costs it nothing; it is generous because on a loaded machine (both cores busy with
 * other work) the same steps take many times as long as on a quiet one. Tests wait for conditions with it,
 * never for a fixed time. It stays well below vitest's testTimeout, so that a failure names the condition.
 */
export const PATIENCE_MS = 60_000;

/** Options of `vi.waitFor` (and `expect.poll`, whose default they are in vitest.config.ts): PATIENCE_MS. */
export const PATIENCE = { timeout: PATIENCE_MS, interval: 50 };
