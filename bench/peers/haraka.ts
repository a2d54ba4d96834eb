/**
 * Haraka as the MX of `bench:mx`, fetched from npm at bench time (`npx --yes haraka@3.3.4`, cached by npm after
 * the first run) and run by this Node: `rcpt_to.in_host_list` for the inbound domain and a queue plugin that
 * writes each message to a file of its own and syncs it before `250`, a durable MX that neither parses,
 * authenticates nor records the message. No DNS plugins; logging at the level Postline runs with.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../test/support/process.ts';
import { type Peer, processFamily, stopPid, waitForPort } from './processes.ts';

const run = promisify(execFile);
export const HARAKA = 'haraka@3.3.4';

/** Haraka's plugin scope provides OK and DENYSOFT; any failure answers 451, never 250. */
const QUEUE_FSYNC = `'use strict'
const fs = require('node:fs')
const path = require('node:path')
exports.hook_queue = function (next, connection) {
  const txn = connection.transaction
  let done = false
  const finish = (code, msg) => { if (!done) { done = true; next(code, msg) } }
  fs.open(path.join(process.env.BENCH_SPOOL_DIR, txn.uuid + '.eml'), 'wx', (err, fd) => {
    if (err) return finish(DENYSOFT, 'spool open failed')
    const ws = fs.createWriteStream(null, { fd, autoClose: false })
    ws.once('error', () => { fs.close(fd, () => {}); finish(DENYSOFT, 'spool write failed') })
    ws.once('finish', () => fs.fsync(fd, (e) => fs.close(fd, () => {
      if (e) return finish(DENYSOFT, 'spool fsync failed')
      finish(OK, 'queued as ' + txn.uuid)
    })))
    txn.message_stream.pipe(ws, { line_endings: '\\r\\n' })
  })
}
`;

/** The path of Haraka's executable script in npm's npx cache, fetching it from the registry if need be. */
async function harakaBin(): Promise<string> {
  const { stdout } = await run(
    'npm',
    [
      'exec',
      '--yes',
      '--prefer-offline',
      '--loglevel=error',
      `--package=${HARAKA}`,
      '-c',
      'command -v haraka',
    ],
    { cwd: os.tmpdir(), timeout: 300_000 },
  );
  return realpathSync(stdout.trim());
}

export interface Haraka extends Peer {
  /** The master's pid; its worker is its child. */
  pid: number;
  /** Messages in the spool, each synced before its `250`. */
  stored(): number;
}

/** Starts Haraka as the MX of `domain`; undefined (with the reason printed) when it cannot be fetched or started. */
export async function startHaraka(domain: string, logLevel: string): Promise<Haraka | undefined> {
  let bin: string;
  try {
    bin = await harakaBin();
  } catch (error) {
    console.log(
      `Haraka could not be fetched from npm (${(error as Error).message.split('\n')[0]}): the bench runs \`npx --yes ${HARAKA}\` itself, which needs the npm registry once (run that command where it is reachable), then npm's cache`,
    );
    return undefined;
  }
  const tmp = mkdtempSync(join(os.tmpdir(), 'postline-bench-haraka-'));
  let child: ChildProcess | undefined;
  const stop = async () => {
    const family = child?.pid && child.exitCode === null ? processFamily(child.pid) : [];
    for (const pid of family) await stopPid(pid);
    rmSync(tmp, { recursive: true, force: true });
  };
  try {
    const dir = join(tmp, 'haraka');
    const spool = join(tmp, 'spool');
    mkdirSync(spool);
    await run(process.execPath, [bin, '-i', dir]);
    const port = await freePort();
    const config = (file: string, text: string) => writeFileSync(join(dir, 'config', file), text);
    config(
      'smtp.ini',
      `listen=127.0.0.1:${port}\npublic_ip=127.0.0.1\ninactivity_timeout=300\nforce_shutdown_timeout=5\n`,
    );
    config('log.ini', `[main]\nlevel=${logLevel}\ntimestamps=false\nformat=default\n`);
    config('me', 'haraka.peer.test\n');
    config('host_list', `${domain}\n`);
    config('plugins', 'rcpt_to.in_host_list\nqueue_fsync\n');
    mkdirSync(join(dir, 'plugins'), { recursive: true });
    writeFileSync(join(dir, 'plugins', 'queue_fsync.js'), QUEUE_FSYNC);
    const log = openSync(join(tmp, 'haraka.log'), 'w');
    const started = spawn(process.execPath, [bin, '-c', dir], {
      env: { ...process.env, BENCH_SPOOL_DIR: spool },
      stdio: ['ignore', log, log],
    });
    child = started;
    closeSync(log);
    await waitForPort(port, 60_000, () => started.exitCode === null);
    const { version } = JSON.parse(readFileSync(join(bin, '..', '..', 'package.json'), 'utf8'));
    return {
      name: `Haraka ${version} (fsync to file)`,
      port,
      pid: started.pid!,
      stored: () => readdirSync(spool).length,
      stop,
    };
  } catch (error) {
    console.log(
      `Haraka did not start: ${(error as Error).message}\n${readFileSync(join(tmp, 'haraka.log'), 'utf8').slice(-2000)}`,
    );
    await stop();
    return undefined;
  }
}
