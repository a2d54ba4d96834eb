import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';
import { PATIENCE } from './test/support/patience.ts';

// Node keeps what it compiled (TypeScript stripped, V8 code) for the test processes, the projection threads
// and the servers and CLIs the tests start: each of them loads the service's modules, a second of CPU apiece.
process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'postline-test-compile-cache');

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'sdk/test/**/*.test.ts'],
    // Time-outs catch a test that hangs; they are no measure of speed. A test's own work (starting services,
    // worker threads, an embedded PostgreSQL) takes many times as long on a machine busy with other work as on a quiet one.
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: 'forks',
    maxWorkers: 2,
    // A worker process runs file after file, so the packages are loaded once a worker instead of once a file (a
    // second and a half of each file's start-up; the suite took a quarter longer isolated). Postline's own modules
    // are still fresh for each file (fresh-modules.ts).
    isolate: false,
    setupFiles: ['test/support/fresh-modules.ts', 'test/support/failure-logs.setup.ts'],
    // expect.poll waits as long as any condition (its own default, a second, fails on a busy machine).
    expect: { poll: PATIENCE },
  },
});
