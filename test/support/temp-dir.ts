import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/**
 * A fresh folder for the test file (`postline-<name>-…` under the system's temp folder), removed after it. Others
 * may enter it: as a data dir under root, its embedded PostgreSQL runs as an unprivileged user.
 */
export function useTempDir(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `postline-${name}-`));
  chmodSync(dir, 0o755);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
