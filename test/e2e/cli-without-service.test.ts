import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, ROOT, runCli, useServiceEnv } from '../support/process.ts';
import { useTempDir } from '../support/temp-dir.ts';

const dir = useTempDir('cli-without-service');
const dataDir = join(dir, 'data');

// Loaded before the CLI: says on standard error when the composition root (every route and process), the HTTP
// side, the SMTP listeners or express are loaded.
const watcher = join(dir, 'watch-loads.mjs');
writeFileSync(
  watcher,
  `import { registerHooks } from 'node:module';
const watched = /\\/(bin\\/composition|bin\\/web|smtp\\/listeners)\\.ts$|\\/node_modules\\/express\\/index\\.js$/;
registerHooks({
  load(url, context, next) {
    const loaded = watched.exec(url);
    if (loaded) process.stderr.write('LOADED ' + (loaded[1] ?? 'express') + '\\n');
    return next(url, context);
  },
});
`,
);
const watching = { NODE_OPTIONS: `--import ${watcher}` };
const env = { POSTLINE_DATA_DIR: dataDir, DATABASE_URL: '', ...watching };
const service = useServiceEnv();

describe('what the CLI loads', () => {
  it("answers help, its version and usage mistakes (of a command's arguments too) without loading the service or starting a database", async () => {
    const help = await runCli(['--help'], env);
    expect([help.code, help.stderr]).toEqual([0, '']);
    expect(help.stdout).toMatch(/^Usage: postline <command>/);
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    for (const flag of ['--version', 'version']) {
      const told = await runCli([flag], env);
      expect([told.code, told.stdout, told.stderr]).toEqual([0, `${version}\n`, '']);
    }
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
    expect((await runCli(['openapi'], env)).stderr).toMatch(/^LOADED bin\/composition$/m);
  });

  it('runs a command with its database without loading the routes, processes, SMTP listeners or express', async () => {
    const run = (args: string[]) => runCli(args, { ...service.env, ...watching });
    const created = await run(['orgs', 'create', '--name', 'Lean', '--json']);
    expect([created.code, created.stderr]).toEqual([0, '']);
    const { org_id } = JSON.parse(created.stdout);
    for (const args of [
      ['orgs', 'list'],
      ['queue', '--org', org_id],
      ['keys', 'create', '--org', org_id],
    ]) {
      const ran = await run(args);
      expect([args, ran.code, ran.stderr]).toEqual([args, 0, '']);
    }
    expect((await run(['orgs', 'list'])).stdout).toContain(org_id);
  });

  it('ends quietly, exit code 0, when its reader closes the pipe early', async () => {
    const child = spawn(process.execPath, [CLI, 'openapi'], { cwd: ROOT, env: { ...process.env, ...env } });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    // The first piece read, the reader goes, as `postline openapi | head -1` does.
    await new Promise((resolve) => child.stdout.once('data', resolve));
    child.stdout.destroy();
    const code = await new Promise((resolve) => child.once('close', resolve));
    expect(code).toBe(0);
    expect(stderr).toMatch(/^LOADED bin\/composition$/m);
  });
});
