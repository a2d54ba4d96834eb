import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { commandOf, processAlive } from '../../platform/process-alive.ts';
import { PATIENCE } from '../support/patience.ts';
import { CLI, expectCleanExit, freePort, startServer } from '../support/process.ts';
import { useTempDir } from '../support/temp-dir.ts';

/** The CLI in embedded mode as an operator meets it: after a crash, from another directory, and interrupted. */
const dataDir = useTempDir('e2e-cli');
const workDir = useTempDir('e2e-cli-work');
const env = { POSTLINE_DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '', LOG_LEVEL: 'warn' };

/** `postline <args>` run from `cwd`, as a user in another directory runs it. */
function cli(args: string[], cwd = workDir) {
  const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const done = new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>(
    (resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, done, stdout: () => stdout };
}

/** An owner.json left by a process killed without a word, its pid now another live process's. */
function staleOwner(other: ChildProcess, port: number) {
  writeFileSync(
    join(dataDir, 'owner.json'),
    JSON.stringify({
      pid: other.pid,
      started: 'when the crashed owner started',
      port,
      host: '127.0.0.1',
      adminToken: randomBytes(24).toString('hex'),
    }),
  );
}

/** The pid of the data dir's PostgreSQL server when one runs. */
function postgresOfDataDir(): number | undefined {
  const lock = join(dataDir, 'postgres', 'postmaster.pid');
  if (!existsSync(lock)) return undefined;
  const pid = Number(readFileSync(lock, 'utf8').split('\n')[0]);
  return processAlive(pid) && commandOf(pid).includes(dataDir) ? pid : undefined;
}

describe('the CLI in embedded mode', () => {
  it('takes over a data dir whose owner.json names a reused pid, reads files where it runs, says 2 on bad options', async () => {
    const port = await freePort();
    const other = spawn('sleep', ['300']);
    try {
      staleOwner(other, port);
      const created = await cli(['orgs', 'create', '--name', 'Acme', '--json']).done;
      expect(created.code, created.stderr).toBe(0);
      const orgId = JSON.parse(created.stdout).org_id;

      staleOwner(other, port);
      const server = await startServer({ ...env, PORT: String(port) });
      try {
        // The server works in another directory: the CLI names the file by its own.
        const name = `people-${randomBytes(4).toString('hex')}.csv`;
        writeFileSync(join(workDir, name), 'email\nann@example.org\n');
        const imported = await cli(['contacts', 'import', name, '--org', orgId]).done;
        expect([imported.code, imported.stdout], imported.stderr).toEqual([
          0,
          expect.stringContaining('1 rows, 1 created'),
        ]);
        // Through the server as without it: a usage mistake on standard error, exit code 2, nothing done.
        const unknownOption = await cli(['orgs', 'create', '--nmae', 'Typo']).done;
        expect([unknownOption.code, unknownOption.stdout, unknownOption.stderr]).toEqual([
          2,
          '',
          expect.stringContaining('orgs create needs --name'),
        ]);
        const extra = await cli(['orgs', 'set-plan', orgId, 'business', 'extra']).done;
        expect([extra.code, extra.stdout, extra.stderr]).toEqual([
          2,
          '',
          expect.stringContaining('orgs set-plan needs <org_id>'),
        ]);
        const listed = await cli(['orgs', 'list', '--json']).done;
        expect([listed.code, JSON.parse(listed.stdout).plan], listed.stderr).toEqual([0, 'free']);
        // Refused by the server: its reason and code, on standard error.
        const owner = readFileSync(join(dataDir, 'owner.json'), 'utf8');
        writeFileSync(join(dataDir, 'owner.json'), JSON.stringify({ ...JSON.parse(owner), adminToken: 'x' }));
        try {
          const refused = await cli(['orgs', 'list']).done;
          expect([refused.code, refused.stdout, refused.stderr]).toEqual([
            1,
            '',
            'The running service refused the command: Invalid admin token (invalid_admin_token, HTTP 401)\n',
          ]);
        } finally {
          writeFileSync(join(dataDir, 'owner.json'), owner);
        }
      } finally {
        await server.stop();
      }
      expectCleanExit(server);
      expect(other.exitCode).toBeNull();
    } finally {
      other.kill();
    }
    // Without a server too.
    const unknownOption = await cli(['keys', 'create', '--org', 'org_x', '--nope']).done;
    expect([unknownOption.code, unknownOption.stderr]).toEqual([
      2,
      expect.stringContaining('keys create needs'),
    ]);
  }, 300_000);

  it('stops its PostgreSQL server and releases the data dir when a command is interrupted (Ctrl-C)', async () => {
    const created = await cli(['orgs', 'create', '--name', 'Big', '--json']).done;
    expect(created.code, created.stderr).toBe(0);
    const orgId = JSON.parse(created.stdout).org_id;
    const rows = Array.from({ length: 200_000 }, (_, i) => `u${i}@example.org`);
    writeFileSync(join(workDir, 'big.csv'), `email\n${rows.join('\n')}\n`);
    const run = cli(['contacts', 'import', 'big.csv', '--org', orgId]);
    try {
      // Interrupted while it imports: its server runs.
      await vi.waitFor(() => {
        if (run.child.exitCode !== null) throw new Error('ended');
        expect(run.stdout()).toContain('import [');
      }, PATIENCE);
      expect(postgresOfDataDir()).toBeDefined();
      run.child.kill('SIGINT');
      const ended = await run.done;
      expect([ended.code, ended.signal], ended.stderr).toEqual([130, null]);
      expect(postgresOfDataDir()).toBeUndefined();
      expect(existsSync(join(dataDir, 'owner.json'))).toBe(false);
    } finally {
      run.child.kill('SIGKILL');
      // A server the CLI left behind is stopped here all the same.
      const left = postgresOfDataDir();
      if (left) {
        process.kill(left, 'SIGINT');
        await vi.waitFor(() => expect(processAlive(left)).toBe(false), PATIENCE);
      }
    }
  }, 300_000);
});
