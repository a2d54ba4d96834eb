import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/process.ts';
import { useTempDir } from '../support/temp-dir.ts';

/** bin/postline.js keeps the modules it loads compiled, for a quicker and smaller next start (docs/configuration.md). */
const tmp = useTempDir('compile-cache');

/** Files under `dir`, at any depth. */
const filesIn = (dir: string): string[] =>
  existsSync(dir)
    ? readdirSync(dir, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => e.name)
    : [];

/** `postline openapi` (no database needed) with the cache variables of `env` only. */
async function openapi(env: Record<string, string>) {
  const run = await runCli(['openapi'], {
    NODE_COMPILE_CACHE: undefined,
    NODE_DISABLE_COMPILE_CACHE: undefined,
    TMPDIR: tmp,
    ...env,
  });
  expect(run.code, run.stderr).toBe(0);
  expect(JSON.parse(run.stdout).openapi).toMatch(/^3\./);
}

describe('the compile cache of `postline`', () => {
  it('is in $TMPDIR/postline-compile-cache, or where NODE_COMPILE_CACHE says, and off with NODE_DISABLE_COMPILE_CACHE', async () => {
    await openapi({});
    expect(filesIn(join(tmp, 'postline-compile-cache')).length).toBeGreaterThan(0);

    const elsewhere = join(tmp, 'elsewhere');
    await openapi({ NODE_COMPILE_CACHE: elsewhere });
    expect(filesIn(elsewhere).length).toBeGreaterThan(0);

    const disabled = join(tmp, 'disabled');
    await openapi({ NODE_COMPILE_CACHE: disabled, NODE_DISABLE_COMPILE_CACHE: '1' });
    expect(filesIn(disabled)).toEqual([]);
  });
});
