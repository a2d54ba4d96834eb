import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { commandOf, processAlive, processStartTime } from '../../platform/process-alive.ts';

/**
 * The data dir of embedded mode has one owner, the process that runs its PostgreSQL server
 * (platform/db/embedded-postgres.ts). The owner writes `owner.json` (pid and start time; for a server also its
 * port and an admin token, mode 0600). A CLI command finds the running server there and routes itself through it.
 */
export interface Owner {
  pid: number;
  /** When the owner started (platform/process-alive.ts): its pid may name another process after a crash. */
  started?: string;
  port?: number;
  /** The server's bind address (`HOST`): a CLI command reaches the admin endpoint there. */
  host?: string;
  adminToken?: string;
}

const file = (dataDir: string) => join(dataDir, 'owner.json');

/** The live owner of the data dir, if any (a stale file from a crashed process is ignored). */
export function currentOwner(dataDir: string): Owner | null {
  if (!existsSync(file(dataDir))) return null;
  try {
    const owner = JSON.parse(readFileSync(file(dataDir), 'utf8')) as Owner;
    return owner.pid !== process.pid && alive(owner) ? owner : null;
  } catch {
    return null;
  }
}

/**
 * The file of an owner killed without a word (kill -9, power loss) names a pid that may be another process's
 * by now: the owner is alive only if the process of that pid started when the owner did. A file without a start
 * time (an earlier version's) counts while its pid is a postline process.
 */
function alive(owner: Owner): boolean {
  if (!processAlive(owner.pid)) return false;
  if (owner.started !== undefined) return processStartTime(owner.pid) === owner.started;
  return commandOf(owner.pid).includes('postline');
}

export function claimDataDir(dataDir: string, server?: { port: number; host: string }): Owner {
  const existing = currentOwner(dataDir);
  if (existing) {
    throw new Error(
      `The data dir ${dataDir} is in use by process ${existing.pid}${existing.port ? ` (serving on port ${existing.port})` : ''}.`,
    );
  }
  mkdirSync(dataDir, { recursive: true });
  const owner: Owner = {
    pid: process.pid,
    started: processStartTime(process.pid),
    port: server?.port,
    host: server?.host,
    adminToken: server ? randomBytes(24).toString('hex') : undefined,
  };
  writeFileSync(file(dataDir), JSON.stringify(owner), { mode: 0o600 });
  return owner;
}

export function releaseDataDir(dataDir: string): void {
  try {
    const owner = JSON.parse(readFileSync(file(dataDir), 'utf8')) as Owner;
    if (owner.pid === process.pid) rmSync(file(dataDir));
  } catch {}
}
