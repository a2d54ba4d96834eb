import { beforeEach } from 'vitest';
import { createLogger, type Logger } from '../../platform/logger.ts';

/** Pieces kept at most, the latest: what led up to a failure. */
const KEPT = 200;
const kept: string[] = [];

/** Keeps `text` (log lines, a server's output) to be printed if the running test fails. */
export function keepForFailure(text: string): void {
  kept.push(text);
  if (kept.length > KEPT) kept.shift();
}

/**
 * The logger of a service a test runs in the test's own process: TEST_LOG_LEVEL's level to standard output when it
 * is set; else its warnings and errors, kept in memory and printed only under a test that fails, so that a 500
 * or a failed job in a run nobody watched leaves its cause in the run's output.
 */
export function testLogger(): Logger {
  const level = process.env.TEST_LOG_LEVEL;
  if (level) return createLogger(level);
  return createLogger('warn', { write: keepForFailure });
}

/** For every test of a file (vitest.config.ts, setupFiles): prints what was kept when it fails, then forgets it. */
export function printLogsOfFailedTests(): void {
  beforeEach(({ onTestFinished }) => {
    onTestFinished(({ task }) => {
      if (task.result?.state === 'fail' && kept.length > 0)
        console.error(`What the test's services logged before the failure:\n${kept.join('')}`);
      kept.length = 0;
    });
  });
}
