import { spawn } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { expect, it } from 'vitest';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../platform/db/embedded-postgres.ts';
import { useTempDir } from '../support/temp-dir.ts';

const dataDir = useTempDir('embedded-postgres');
const lockFile = join(dataDir, 'postgres', 'postmaster.pid');
const socketLock = join(dataDir, 'postgres', '.s.PGSQL.5432.lock');

async function count(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('CREATE TABLE IF NOT EXISTS kept (n int)');
    await client.query('INSERT INTO kept VALUES (1)');
    return (await client.query('SELECT count(*)::int AS n FROM kept')).rows[0].n;
  } finally {
    await client.end();
  }
}

it('makes its cluster once, keeps its data across starts, and replaces locks naming another live process', async () => {
  const first = await startEmbeddedPostgres(dataDir);
  try {
    expect(await count(first.url)).toBe(1);
    // Only a unix socket in the data dir: nothing listens on TCP.
    expect(new URL(first.url).searchParams.get('host')).toBe(join(dataDir, 'postgres'));
  } finally {
    await first.stop();
  }

  // The locks a crash leaves (postmaster.pid and the socket's), their pid now another live process of the
  // server's user: stale, not a server. (PostgreSQL itself would refuse them; it ignores only its parent's pid
  // and other users' processes.)
  const { uid, gid } = statSync(join(dataDir, 'postgres'));
  const other = spawn('sleep', ['60'], process.getuid?.() === 0 ? { uid, gid } : {});
  writeFileSync(lockFile, `${other.pid}\n${join(dataDir, 'postgres')}\n`);
  writeFileSync(socketLock, `${other.pid}\n${join(dataDir, 'postgres')}\n`);
  let second: EmbeddedPostgres | undefined;
  try {
    second = await startEmbeddedPostgres(dataDir);
    expect(await count(second.url)).toBe(2);
    for (const lock of [lockFile, socketLock])
      expect(Number(readFileSync(lock, 'utf8').split('\n')[0])).not.toBe(other.pid);
    expect(other.exitCode).toBeNull();
  } finally {
    other.kill();
    await second?.stop();
  }
});
