/**
 * `npm run bench:mx`: the inbound MX under the load Postfix's `smtp-source` puts on an MX (8 sessions, many
 * messages per connection, no pipelining), each message about 3 KB with a small attachment, for an inbound
 * domain. Postline runs as `npm start` runs it (a process of its own, PostgreSQL, every process manager). Measured:
 * messages/s answered `250`, which the MX says only once the message is parsed, authenticated (SPF, DKIM, DMARC
 * against a loopback DNS server), its raw bytes, content and attachment written and synced, and its event
 * committed; and the CPU per message of Postline's process and its PostgreSQL backends.
 *
 * Beside it, in the same run, Haraka from npm (bench/peers/haraka.ts) with a queue plugin that syncs each message
 * to a file before `250`, on the same load, and its CPU per message. The sides alternate, each run after Postline
 * has gone quiet; every run prints both and the ratio, then the medians. First, round trips per message
 * (bench/round-trips.ts): BENCH_COUNT_MESSAGES (default 1000; 0 skips it) received by a Postline of their own on
 * a private PostgreSQL. Settings: BENCH_MESSAGES (default 5000), BENCH_SESSIONS (8), BENCH_MESSAGE_BYTES (3000),
 * BENCH_RUNS (3), TEST_DATABASE_ADMIN_URL (as the tests).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createTestDatabaseUrl } from '../test/support/databases.ts';
import { startDnsServer, type TestDnsServer } from '../test/support/dns-server.ts';
import { freePort, startServer } from '../test/support/process.ts';
import { familyCpuMeter, processCpu } from './cpu.ts';
import { machineLine } from './machine.ts';
import { startHaraka } from './peers/haraka.ts';
import { alternately, median, type Peer, quiet, ratio } from './peers/processes.ts';
import { countOnServer } from './round-trips.ts';
import { runLoad, type SmtpLoad } from './smtp-load.ts';
import { organizationWithDomain } from './verified-domain.ts';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 5000);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 8);
const MESSAGE_BYTES = Number(process.env.BENCH_MESSAGE_BYTES ?? 3000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const DOMAIN = 'acme-in.test';
const COUNT = Number(process.env.BENCH_COUNT_MESSAGES ?? 1000);

/** About MESSAGE_BYTES: a text part in lines of 76 characters and a small attachment, as a mail client writes. */
function message(i: number): string {
  const attachment = Buffer.from(`receipt ${i}\n`.repeat(20)).toString('base64');
  const head = [
    'From: Ann <ann@remote.test>',
    `To: support@${DOMAIN}`,
    `Subject: Question ${i}`,
    `Message-ID: <q${i}@remote.test>`,
    'Date: Wed, 25 Nov 2026 10:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b"',
    '',
    '--b',
    'Content-Type: text/plain; charset=utf-8',
    '',
    '',
  ].join('\r\n');
  const tail = `--b\r\nContent-Type: text/plain; name="receipt.txt"\r\nContent-Disposition: attachment; filename="receipt.txt"\r\nContent-Transfer-Encoding: base64\r\n\r\n${attachment}\r\n--b--\r\n`;
  const line = `${'Where is the order I placed last week? '.repeat(2).slice(0, 76)}\r\n`;
  const lines = Math.max(1, Math.round((MESSAGE_BYTES - head.length - tail.length) / line.length));
  return `${head}${line.repeat(lines)}${tail}.\r\n`;
}

/** The same load for Postline and Haraka: smtp-source's shape, from a remote sender to the inbound domain. */
const LOAD: SmtpLoad = {
  sessions: SESSIONS,
  ehlo: 'mx.remote.test',
  from: 'ann@remote.test',
  to: () => `support@${DOMAIN}`,
  message,
};

type Measured = { rate: number; cpuMs: number; pgMs: number };

/** Messages/s answered 250, and CPU ms per message of a process and its children, and of its database's backends. */
async function measure(port: number, first: number, pid: number, postlinePid: number, database?: string) {
  await quiet(postlinePid, processCpu);
  const cpuSince = familyCpuMeter(pid, database);
  const t0 = performance.now();
  await runLoad(port, LOAD, first, MESSAGES);
  const t1 = performance.now();
  const { node, pg } = cpuSince();
  return {
    rate: MESSAGES / ((t1 - t0) / 1000),
    cpuMs: ((node + pg) * 1000) / MESSAGES,
    pgMs: (pg * 1000) / MESSAGES,
  } satisfies Measured;
}

const figures = (r: Measured) =>
  `${r.rate.toFixed(0)} msg/s, CPU ${r.cpuMs.toFixed(2)} ms/msg${r.pgMs > 0 ? ` (PostgreSQL ${r.pgMs.toFixed(2)})` : ''}`;

/** Round trips per message received (bench/round-trips.ts), on a Postline of its own. */
const countRoundTrips = (env: Record<string, string>, dns: TestDnsServer) =>
  countOnServer(env, ['PORT', 'SMTP_MX_PORT'], async (own) => {
    await organizationWithDomain(own, Number(own.PORT), dns, DOMAIN, { inbound_enabled: true });
    const warm = 100;
    await runLoad(Number(own.SMTP_MX_PORT), LOAD, 0, warm);
    return async () => {
      await runLoad(Number(own.SMTP_MX_PORT), LOAD, warm, COUNT);
      return COUNT;
    };
  });

async function main() {
  console.log(await machineLine());
  const { url, drop } = await createTestDatabaseUrl();
  const database = new URL(url).pathname.slice(1);
  const dataDir = mkdtempSync(join(os.tmpdir(), 'postline-bench-mx-'));
  const dns = await startDnsServer();
  // The sender's records, so that SPF, DKIM and DMARC are looked up as for real mail (SPF passes).
  dns.set('remote.test', 'TXT', [['v=spf1 ip4:127.0.0.1 -all']]);
  dns.set('_dmarc.remote.test', 'TXT', [['v=DMARC1; p=none']]);
  const [httpPort, mxPort] = [await freePort(), await freePort()];
  const env = {
    DATABASE_URL: url,
    POSTLINE_DATA_DIR: dataDir,
    POSTLINE_SECRET_KEY: randomBytes(32).toString('base64'),
    REDIS_URL: '',
    LOG_LEVEL: 'warn',
    PORT: String(httpPort),
    SMTP_MX_PORT: String(mxPort),
    SMTP_SUBMISSION_PORT: 'off',
    SMTP_SUBMISSIONS_PORT: 'off',
    SMTP_MAX_CONNECTIONS_PER_IP: String(SESSIONS * 2),
    DNS_SERVERS: dns.serverAddress,
    POSTLINE_MX_HOST: 'mx.postline.test',
    POSTLINE_SPF_INCLUDE: 'spf.postline.test',
  };
  // Counted first: the timed run's organization publishes its domain's records last.
  if (COUNT > 0) console.log((await countRoundTrips(env, dns)).join('\n'));
  const server = await startServer(env);
  let peer: Peer | undefined;
  try {
    await organizationWithDomain(env, httpPort, dns, DOMAIN, { inbound_enabled: true });

    const haraka = await startHaraka(DOMAIN, env.LOG_LEVEL);
    peer = haraka;
    // Warm-up: connections, caches, the JIT.
    let sent = 0;
    await runLoad(mxPort, LOAD, sent, 200);
    if (haraka) await runLoad(haraka.port, LOAD, sent, 200);
    sent += 200;

    const pid = server.child.pid!;
    const results: { postline: Measured; haraka?: Measured }[] = [];
    for (let run = 1; run <= RUNS; run++) {
      const [postline, other] = await alternately(
        run,
        () => measure(mxPort, sent, pid, pid, database),
        haraka && (() => measure(haraka.port, sent, haraka.pid, pid)),
      );
      sent += MESSAGES;
      if (haraka && haraka.stored() !== sent)
        throw new Error(`Haraka stored ${haraka.stored()} of ${sent} messages`);
      results.push({ postline, haraka: other });
      console.log(
        `run ${run}: ${MESSAGES} messages, ${SESSIONS} sessions, ${message(0).length} B: Postline ${figures(postline)} (250 after parse, authentication, fsync and commit; Postline and its PostgreSQL)` +
          (other && haraka ? `; ${haraka.name} ${figures(other)}: ${ratio(postline.rate, other.rate)}` : ''),
      );
    }
    // BENCH_RUNS=0: the round trips were counted, nothing was timed.
    if (results.length === 0) return;
    const med = (pick: (r: (typeof results)[number]) => number) => median(results.map(pick));
    const medianOf = (side: (r: (typeof results)[number]) => Measured) => ({
      rate: med((r) => side(r).rate),
      cpuMs: med((r) => side(r).cpuMs),
      pgMs: med((r) => side(r).pgMs),
    });
    const postline = medianOf((r) => r.postline);
    const other = haraka && medianOf((r) => r.haraka!);
    console.log(
      `MEDIAN MX (${RUNS} runs alternating, N=${MESSAGES}, ${os.cpus().length} cores): Postline ${figures(postline)}` +
        (other
          ? `; ${haraka.name} ${figures(other)}; Postline/Haraka ${ratio(postline.rate, other.rate)}`
          : ''),
    );
  } finally {
    await peer?.stop();
    await server.stop();
    await dns.close();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
