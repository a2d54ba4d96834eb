import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { createTestDatabaseUrl, TEST_POOL_SIZE } from './databases.ts';
import { keepForFailure } from './failure-logs.ts';
import { PATIENCE_MS } from './patience.ts';

export const ROOT = join(import.meta.dirname, '..', '..');
export const CLI = join(ROOT, 'bin', 'postline.js');
/** How long a server a test starts gets to be ready: an embedded first start (initdb) is slow when busy. */
export const SERVER_START_MS = 90_000;

/**
 * The environment the service processes of one test file share: a fresh PostgreSQL database, a data dir and a
 * secret key, with `extra` on top. Filled in before the file's tests (`setup.env`), removed after them.
 */
export function useServiceEnv(extra: Record<string, string> = {}): { env: Record<string, string> } {
  const setup = { env: {} as Record<string, string> };
  const dataDir = mkdtempSync(join(tmpdir(), 'postline-e2e-'));
  let drop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const db = await createTestDatabaseUrl();
    drop = db.drop;
    setup.env = {
      DATABASE_URL: db.url,
      DATABASE_POOL_SIZE: String(TEST_POOL_SIZE),
      POSTLINE_SECRET_KEY: randomBytes(32).toString('base64'),
      POSTLINE_DATA_DIR: dataDir,
      REDIS_URL: '',
      ...extra,
    };
  });
  afterAll(async () => {
    await drop?.();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return setup;
}

/**
 * Ports the tests pick, below the kernel's ephemeral range (32768 and up on Linux): a port from that range may be
 * taken, between a test's pick and its server's start (or restart, after a crash), by any outgoing connection, a
 * database pool's say, while ports below it go only to listeners that ask for them. Test files running side by
 * side (VITEST_POOL_ID) pick from slices of their own, in turn from a random place.
 */
const PORTS = { first: 20_000, slice: 3_000, slices: 4 };
let nextPort = randomInt(PORTS.slice);

/** A port nothing listens on now, from this test file's slice. */
export async function freePort(): Promise<number> {
  const slice = (Number(process.env.VITEST_POOL_ID ?? 1) - 1) % PORTS.slices;
  for (let tried = 0; tried < PORTS.slice; tried++) {
    const port = PORTS.first + slice * PORTS.slice + (nextPort++ % PORTS.slice);
    if (await listenable(port)) return port;
  }
  throw new Error("No free port left in this test file's slice");
}

const listenable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

/** Runs the CLI to completion: `postline <args>`; a variable set to undefined in `env` is not passed on. */
export function runCli(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** Creates an organization as an operator does, with `postline orgs create --json`: its id and its two keys. */
export async function createOrgWithCli(
  env: Record<string, string>,
  name: string,
  plan?: string,
): Promise<{ org_id: string; live_key: string; test_key: string }> {
  const args = ['orgs', 'create', '--name', name, ...(plan ? ['--plan', plan] : []), '--json'];
  const created = await runCli(args, env);
  expect(created.code, created.stderr).toBe(0);
  return JSON.parse(created.stdout);
}

/** Starts `postline serve` as a user would and waits until /readyz answers. */
export async function startServer(
  env: Record<string, string>,
): Promise<{ child: ChildProcess; output: () => string; stop: () => Promise<void> }> {
  // The file itself, as `npm start` runs it: its first line gives Node its flags.
  const child = spawn(CLI, ['serve'], {
    cwd: ROOT,
    // SMTP listeners on free ports unless a test names them: test files run side by side. A write's answer
    // waits for its read models as long as a test waits for any condition (5 s, the default, runs out).
    env: {
      ...process.env,
      LOG_LEVEL: 'warn',
      PORT: '0',
      SMTP_SUBMISSION_PORT: '0',
      SMTP_SUBMISSIONS_PORT: '0',
      SMTP_MX_PORT: '0',
      PROJECTION_WAIT_MS: String(PATIENCE_MS),
      ...env,
    },
  });
  let output = '';
  const take = (d: Buffer) => {
    output += d;
    keepForFailure(String(d));
  };
  child.stdout!.on('data', take);
  if (process.env.E2E_SERVER_LOG)
    child.stdout!.pipe(require('node:fs').createWriteStream(process.env.E2E_SERVER_LOG));
  child.stderr!.on('data', take);
  if (process.env.E2E_SERVER_LOG)
    child.stderr!.pipe(require('node:fs').createWriteStream(`${process.env.E2E_SERVER_LOG}.err`));
  const deadline = Date.now() + SERVER_START_MS;
  while (true) {
    if (child.exitCode !== null) throw new Error(`server exited: ${output}`);
    // A process without the api role serves no HTTP: it is ready once it says it runs.
    if (env.POSTLINE_ROLES && !env.POSTLINE_ROLES.includes('api') && !env.POSTLINE_ROLES.includes('all')) {
      if (output.includes('Postline running')) break;
    } else {
      try {
        const r = await fetch(`http://${env.HOST ?? '127.0.0.1'}:${env.PORT}/readyz`);
        if (r.status === 200) break;
      } catch {}
    }
    if (Date.now() > deadline) throw new Error(`server not ready: ${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    output: () => output,
    stop: async () => {
      // Exited already: by itself (an exit code) or killed (a signal).
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The server exited 0; if not, the assertion shows the errors it printed. */
export function expectCleanExit(server: { child: ChildProcess; output: () => string }) {
  expect(
    server.child.exitCode,
    server
      .output()
      .match(/\w*Error.{0,400}/g)
      ?.join('\n'),
  ).toBe(0);
}
