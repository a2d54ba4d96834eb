import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/** A fresh folder for the test file (`postline-<name>-…` under the system's temp folder), removed after it. */
export function useTempDir(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `postline-${name}-`));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
