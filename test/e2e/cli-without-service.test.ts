import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, ROOT, runCli } from '../support/process.ts';
import { useTempDir } from '../support/temp-dir.ts';

const dir = useTempDir('cli-without-service');
const dataDir = join(dir, 'data');

// Loaded before the CLI: says on standard error when the composition root (every route and process) is loaded.
const watcher = join(dir, 'watch-loads.mjs');
writeFileSync(
  watcher,
  `import { registerHooks } from 'node:module';
registerHooks({
  load(url, context, next) {
    if (url.endsWith('/bin/composition.ts')) process.stderr.write('LOADED composition\\n');
    return next(url, context);
  },
});
`,
);
const env = { POSTLINE_DATA_DIR: dataDir, DATABASE_URL: '', NODE_OPTIONS: `--import ${watcher}` };

describe('the CLI before it needs a Postline', () => {
  it("answers help and usage mistakes (of a command's arguments too) without loading the service or starting a database", async () => {
    const help = await runCli(['--help'], env);
    expect([help.code, help.stderr]).toEqual([0, '']);
    expect(help.stdout).toMatch(/^Usage: postline <command>/);
    for (const args of [[], ['bogus'], ['orgs'], ['queue', 'bogus']]) {
      const mistaken = await runCli(args, env);
      expect([args, mistaken.code, mistaken.stdout]).toEqual([args, 2, '']);
      expect(mistaken.stderr).toMatch(/^Usage: postline <command>/);
    }
    // A command's own arguments are checked before anything starts for it, each saying what it needs.
    for (const [args, said] of [
      [['queue', '--bogus'], /^queue takes --org/],
      [['queue', 'pause', 'gmail.com', '--for', 'soon'], /^Not a duration: soon\. queue pause needs/],
      [['queue', 'retry', 'localhost'], /^`destination` must have at least two labels/],
      [['orgs', 'set-plan', 'org_x', 'gold'], /^orgs set-plan needs <org_id> <free\|pro\|business>/],
      [['keys', 'create', '--mode', 'live'], /^keys create needs --org <org_id>/],
      [['contacts', 'import', '--org', 'org_x'], /^contacts import needs <file\.csv>/],
      [['streams', 'show'], /^streams show needs <stream-id>/],
    ] as const) {
      const mistaken = await runCli([...args], env);
      expect([args, mistaken.code, mistaken.stdout]).toEqual([args, 2, '']);
      expect(mistaken.stderr).toMatch(said);
    }
    // Nothing was started for them: the embedded server would have made its data dir.
    expect(existsSync(dataDir)).toBe(false);
    // The watcher sees what needs the routes: the OpenAPI document.
    expect((await runCli(['openapi'], env)).stderr).toBe('LOADED composition\n');
  });

  it('ends quietly, exit code 0, when its reader closes the pipe early', async () => {
    const child = spawn(process.execPath, [CLI, 'openapi'], { cwd: ROOT, env: { ...process.env, ...env } });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    // The first piece read, the reader goes, as `postline openapi | head -1` does.
    await new Promise((resolve) => child.stdout.once('data', resolve));
    child.stdout.destroy();
    const code = await new Promise((resolve) => child.once('close', resolve));
    expect([code, stderr]).toEqual([0, 'LOADED composition\n']);
  });
});
