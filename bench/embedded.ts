/**
 * `bench:send`'s embedded part: Postline as `npm start` runs it, a process of its own with its process managers,
 * on its embedded PostgreSQL (no DATABASE_URL) and, under the same load, on PostgreSQL (a fresh database). For each: resident
 * memory once it answers /readyz (and 2 s more), `POST /v1/emails` with a test key at 50 connections
 * (autocannon), the peak resident memory under that load, and the CPU per email of the service's process and of
 * its PostgreSQL backends (the embedded server's, or the machine's when on this machine). See bench/README.md.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { createTestDatabaseUrl } from '../test/support/databases.ts';
import { CLI, freePort, ROOT } from '../test/support/process.ts';
import { postgresCpu, postgresCpuSince, processCpu } from './cpu.ts';
import { median } from './peers/processes.ts';

const MIB = 2 ** 20;

/** Resident memory of a process, MiB. */
const rssOf = (pid: number) =>
  (Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * 4096) / MIB;
/**
 * CPU seconds used so far by each backend of the embedded server started by `pid` (its child's children whose
 * command line names the database `postline`), as postgresCpu reads those of the machine's server.
 */
function embeddedBackendsCpu(pid: number): Map<string, number> {
  const parentOf = new Map<string, string>();
  for (const p of readdirSync('/proc').filter((p) => /^\d+$/.test(p)))
    try {
      parentOf.set(p, readFileSync(`/proc/${p}/stat`, 'latin1').split(') ')[1].split(' ')[1]);
    } catch {}
  const postmasters = new Set([...parentOf].filter(([, parent]) => parent === String(pid)).map(([p]) => p));
  const out = new Map<string, number>();
  for (const [p, parent] of parentOf)
    try {
      if (postmasters.has(parent) && readFileSync(`/proc/${p}/cmdline`, 'latin1').includes(' postline '))
        out.set(p, processCpu(Number(p)));
    } catch {}
  return out;
}

type Autocannon = (o: Record<string, unknown>) => Promise<any>;

export interface EmbeddedResult {
  backend: 'embedded PostgreSQL' | 'PostgreSQL';
  startMs: number;
  rssStart: number;
  rssPeak: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** Microseconds of CPU per accepted email: the service's process, and its PostgreSQL backends (or null). */
  cpuNode: number;
  cpuPg: number | null;
}

async function serve(env: Record<string, string>): Promise<{ child: ChildProcess; startMs: number }> {
  const started = Date.now();
  // The file itself, as `npm start` runs it: its first line gives Node its flags.
  const child = spawn(CLI, ['serve'], { cwd: ROOT, env: { ...process.env, ...env } });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  while (true) {
    if (child.exitCode !== null) throw new Error(`server exited: ${output}`);
    try {
      if ((await fetch(`http://127.0.0.1:${env.PORT}/readyz`)).status === 200) break;
    } catch {}
    if (Date.now() - started > 120_000) throw new Error(`server not ready: ${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, startMs: Date.now() - started };
}

function cli(args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...process.env, ...env } });
    let out = '';
    c.stdout.on('data', (d) => (out += d));
    c.stderr.on('data', (d) => (out += d));
    c.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(out))));
  });
}

/** One back end: a fresh data dir (and database), a fresh process. */
async function measureOne(
  backend: EmbeddedResult['backend'],
  seconds: number,
  body: unknown,
  autocannon: Autocannon,
): Promise<EmbeddedResult> {
  const dataDir = mkdtempSync(join(os.tmpdir(), 'postline-bench-embedded-'));
  // Started as root, the embedded server runs as another user, who must reach the data dir.
  chmodSync(dataDir, 0o755);
  const database = backend === 'PostgreSQL' ? await createTestDatabaseUrl() : undefined;
  const port = await freePort();
  const env = {
    PORT: String(port),
    POSTLINE_DATA_DIR: dataDir,
    DATABASE_URL: database?.url ?? '',
    REDIS_URL: '',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_RPS: '1000000',
    RATE_LIMIT_BATCH_RPS: '1000000',
    // Every listener as `npm start` opens them, on free ports: a Postline running beside holds the defaults.
    SMTP_SUBMISSION_PORT: '0',
    SMTP_SUBMISSIONS_PORT: '0',
    SMTP_MX_PORT: '0',
  };
  const { child, startMs } = await serve(env);
  const pid = child.pid!;
  try {
    await new Promise((r) => setTimeout(r, 2000));
    const rssStart = rssOf(pid);
    const org = JSON.parse(
      (await cli(['orgs', 'create', '--name', 'Bench', '--plan', 'business', '--json'], env))
        .trim()
        .split('\n')
        .at(-1)!,
    );
    const run = (duration: number) =>
      autocannon({
        url: `http://127.0.0.1:${port}/v1/emails`,
        method: 'POST',
        connections: 50,
        duration,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${org.test_key}` },
        body: JSON.stringify(body),
      });
    await run(2); // warm-up (JIT, caches)
    const dbName = database ? new URL(database.url).pathname.slice(1) : undefined;
    const backends = () => (dbName ? postgresCpu(dbName) : embeddedBackendsCpu(pid));
    const pgBefore = backends();
    const cpuBefore = processCpu(pid);
    let rssPeak = 0;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, rssOf(pid));
    }, 200);
    const r = await run(seconds);
    clearInterval(sampler);
    rssPeak = Math.max(rssPeak, rssOf(pid));
    const ok = Math.max(1, r['2xx']);
    const pgAfter = backends();
    return {
      backend,
      startMs,
      rssStart,
      rssPeak,
      rps: r['2xx'] / seconds,
      p50: r.latency.p50,
      p99: r.latency.p99,
      errors: r.non2xx + r.errors,
      cpuNode: ((processCpu(pid) - cpuBefore) * 1e6) / ok,
      cpuPg: pgAfter.size > 0 ? (postgresCpuSince(pgBefore, pgAfter) * 1e6) / ok : null,
    };
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
    await database?.drop();
  }
}

/** What the embedded default must show against the machine's PostgreSQL (bench/README.md). */
const AIMS = { ratio: 80, p99Ms: 200, readyMiB: 250 };

/**
 * The embedded PostgreSQL and the machine's one after the other, `rounds` times (3 at least: the aims are read
 * off the medians), alternating; a line for each run, the ratio of each round and the medians against the aims.
 */
export async function measureEmbedded(o: {
  seconds: number;
  rounds: number;
  body: unknown;
  autocannon: Autocannon;
}): Promise<string[]> {
  const lines: string[] = [];
  const rounds: { embedded: EmbeddedResult; machine: EmbeddedResult }[] = [];
  for (let i = 0; i < Math.max(3, o.rounds); i++) {
    const embedded = await measureOne('embedded PostgreSQL', o.seconds, o.body, o.autocannon);
    const machine = await measureOne('PostgreSQL', o.seconds, o.body, o.autocannon);
    rounds.push({ embedded, machine });
    for (const r of [embedded, machine])
      lines.push(
        `\`npm start\` on ${r.backend}: POST /v1/emails, 50 connections, ${r.rps.toFixed(0)} emails/s, p50 ${r.p50} ms, p99 ${r.p99} ms` +
          ` (non-2xx ${r.errors}); resident memory ${r.rssStart.toFixed(0)} MiB once ready (${(r.startMs / 1000).toFixed(1)} s, new data dir),` +
          ` ${r.rssPeak.toFixed(0)} MiB at most under load; CPU per email ${(r.cpuNode + (r.cpuPg ?? 0)).toFixed(0)} µs` +
          ` (service ${r.cpuNode.toFixed(0)}${r.cpuPg === null ? '' : ` + PostgreSQL ${r.cpuPg.toFixed(0)}`})`,
      );
  }
  const percents = rounds.map((r) => (100 * r.embedded.rps) / r.machine.rps);
  const [percent, p99, ready] = [
    median(percents),
    median(rounds.map((r) => r.embedded.p99)),
    median(rounds.map((r) => r.embedded.rssStart)),
  ];
  const met = percent >= AIMS.ratio && p99 < AIMS.p99Ms && ready < AIMS.readyMiB;
  lines.push(
    `MEDIAN embedded (${rounds.length} rounds, embedded first): ${median(rounds.map((r) => r.embedded.rps)).toFixed(0)} emails/s,` +
      ` on PostgreSQL ${median(rounds.map((r) => r.machine.rps)).toFixed(0)}; embedded/PostgreSQL ${percent.toFixed(0)} %` +
      ` (the median of rounds ${percents.map((x) => x.toFixed(0)).join(', ')} %); p99 ${p99} ms; ${ready.toFixed(0)} MiB once ready` +
      ` (aims: ≥ ${AIMS.ratio} %, p99 < ${AIMS.p99Ms} ms, < ${AIMS.readyMiB} MiB: ${met ? 'met' : 'not met'})`,
  );
  return lines;
}
