/**
 * `npm run bench:smtp`: the SMTP relay under the load Postfix's `smtp-source` puts on a relay (8 sessions, many
 * messages per connection, no pipelining, about 3 KB a message), with AUTH. Postline runs as `npm start` runs it
 * (a process of its own, PostgreSQL, every process manager); the receiving server is another process, found
 * through the MX of a loopback DNS server. Measured:
 *
 * - accept: messages/s answered `250` (each after its events are committed);
 * - end to end: messages/s from the first MAIL to the receiver's acceptance of the last one, DKIM-signed.
 *
 * Beside it, in the same run, Postfix (bench/peers/postfix.ts) when Debian's `postfix` package is installed: the
 * same load (without AUTH) into its smtpd, relayed to the same receiver. The sides alternate, each run after
 * Postline has gone quiet; every run prints both and the ratio, then the medians. First, round trips per message
 * (bench/round-trips.ts): BENCH_COUNT_MESSAGES (default 1000; 0 skips it) accepted and delivered by a Postline of
 * their own on a private PostgreSQL. Settings: BENCH_MESSAGES (default 5000), BENCH_SESSIONS (8),
 * BENCH_MESSAGE_BYTES (3000), BENCH_RUNS (3), BENCH_REDIS_URL (default redis://127.0.0.1:6379),
 * TEST_DATABASE_ADMIN_URL (as the tests).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createTestDatabaseUrl } from '../test/support/databases.ts';
import { startDnsServer, type TestDnsServer } from '../test/support/dns-server.ts';
import { recipientDomainOnLoopback } from '../test/support/domains.ts';
import { freePort, startServer } from '../test/support/process.ts';
import { familyCpuMeter, processCpu } from './cpu.ts';
import { machineLine } from './machine.ts';
import { startPostfix } from './peers/postfix.ts';
import { alternately, median, type Peer, quiet, ratio } from './peers/processes.ts';
import { type Receiver, startReceiver } from './receiver.ts';
import { countOnServer } from './round-trips.ts';
import { runLoad, type SmtpLoad } from './smtp-load.ts';
import { organizationWithDomain } from './verified-domain.ts';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 5000);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 8);
const MESSAGE_BYTES = Number(process.env.BENCH_MESSAGE_BYTES ?? 3000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const COUNT = Number(process.env.BENCH_COUNT_MESSAGES ?? 1000);

/** A message of about MESSAGE_BYTES, in lines of 76 characters as a mail client writes them. */
function message(i: number): string {
  const head = `From: Acme <hello@acme-bench.test>\r\nTo: r${i}@rcpt.test\r\nSubject: Your order ${i} has shipped\r\n\r\n`;
  const line = `${'Your order is on its way. '.repeat(3).slice(0, 76)}\r\n`;
  return `${head}${line.repeat(Math.max(1, Math.round((MESSAGE_BYTES - head.length) / line.length)))}.\r\n`;
}

/** The same load for Postline and Postfix; only Postline is asked to authenticate (Postfix relays for loopback). */
const load = (key?: string): SmtpLoad => ({
  sessions: SESSIONS,
  ehlo: 'bench.test',
  key,
  from: 'hello@acme-bench.test',
  to: (i) => `r${i}@rcpt.test`,
  message,
});

interface Rates {
  accept: number;
  e2e: number;
  /** Postline's CPU ms per message relayed (its process and its database's backends; PostgreSQL's apart). */
  cpu?: { ms: number; pgMs: number };
}

/**
 * Accept: all answered 250; end to end: from the first MAIL until the receiver has accepted the last. Postline's
 * CPU counts until its process has gone quiet again: the outcomes' records and projections after the last delivery.
 */
async function measure(
  port: number,
  smtp: SmtpLoad,
  receiver: Receiver,
  first: number,
  postline: { pid: number; database?: string },
) {
  await quiet(postline.pid, processCpu);
  const delivered = receiver.count() + MESSAGES;
  const since = postline.database ? familyCpuMeter(postline.pid, postline.database) : undefined;
  const t0 = performance.now();
  await runLoad(port, smtp, first, MESSAGES);
  const t1 = performance.now();
  const t2 = await receiver.until(delivered);
  let cpu: Rates['cpu'];
  if (since) {
    await quiet(postline.pid, processCpu);
    const { node, pg } = since();
    cpu = { ms: ((node + pg) * 1000) / MESSAGES, pgMs: (pg * 1000) / MESSAGES };
  }
  return { accept: MESSAGES / ((t1 - t0) / 1000), e2e: MESSAGES / ((t2 - t0) / 1000), cpu };
}

const figures = (r: Rates) =>
  `accept ${r.accept.toFixed(0)} msg/s, end to end ${r.e2e.toFixed(0)} msg/s` +
  (r.cpu ? `, CPU ${r.cpu.ms.toFixed(2)} ms/msg (PostgreSQL ${r.cpu.pgMs.toFixed(2)})` : '');
const ratios = (p: Rates, o: Rates) =>
  `accept ${ratio(p.accept, o.accept)}, end to end ${ratio(p.e2e, o.e2e)}`;

/** Round trips per relayed message, accepted and delivered (bench/round-trips.ts), with a receiver of its own. */
async function countRoundTrips(env: Record<string, string>, dns: TestDnsServer): Promise<string[]> {
  const receiver = await startReceiver();
  try {
    const withReceiver = { ...env, OUTBOUND_SMTP_PORT: String(receiver.port) };
    return await countOnServer(withReceiver, ['PORT', 'SMTP_SUBMISSION_PORT'], async (own) => {
      const [smtp, warm] = [
        load(await organizationWithDomain(own, Number(own.PORT), dns, 'acme-bench.test')),
        100,
      ];
      await runLoad(Number(own.SMTP_SUBMISSION_PORT), smtp, 0, warm);
      await receiver.until(warm);
      return async () => {
        await runLoad(Number(own.SMTP_SUBMISSION_PORT), smtp, warm, COUNT);
        await receiver.until(warm + COUNT);
        return COUNT;
      };
    });
  } finally {
    receiver.close();
  }
}

async function main() {
  console.log(await machineLine());
  const { url, drop } = await createTestDatabaseUrl();
  const dataDir = mkdtempSync(join(os.tmpdir(), 'postline-bench-smtp-'));
  const dns = await startDnsServer();
  const receiver = await startReceiver();
  recipientDomainOnLoopback(dns);
  const [httpPort, smtpPort] = [await freePort(), await freePort()];
  const env = {
    DATABASE_URL: url,
    POSTLINE_DATA_DIR: dataDir,
    POSTLINE_SECRET_KEY: randomBytes(32).toString('base64'),
    REDIS_URL,
    LOG_LEVEL: 'warn',
    PORT: String(httpPort),
    RATE_LIMIT_RPS: '1000000',
    // As Postfix in the comparison: a plain connection (the load generator speaks no TLS).
    SMTP_SUBMISSION_PORT: String(smtpPort),
    SMTP_SUBMISSIONS_PORT: 'off',
    SMTP_ALLOW_INSECURE_AUTH: 'true',
    SMTP_MAX_CONNECTIONS_PER_IP: String(SESSIONS * 2),
    DNS_SERVERS: dns.serverAddress,
    OUTBOUND_SMTP_PORT: String(receiver.port),
    POSTLINE_MX_HOST: 'mx.postline.test',
    POSTLINE_SPF_INCLUDE: 'spf.postline.test',
  };
  // Counted first: the timed run's organization publishes its domain's records last.
  if (COUNT > 0) console.log((await countRoundTrips(env, dns)).join('\n'));
  const server = await startServer(env);
  let peer: Peer | undefined;
  try {
    const key = await organizationWithDomain(env, httpPort, dns, 'acme-bench.test');

    const postfix = await startPostfix(receiver.port);
    peer = postfix;
    const [postline, other] = [load(key), load()];
    // Warm-up: connections, caches, the JIT.
    let sent = 0;
    await runLoad(smtpPort, postline, sent, 200);
    await receiver.until(200);
    if (postfix) await runLoad(postfix.port, other, sent, 200);
    await receiver.until(postfix ? 400 : 200);
    sent += 200;

    const pid = server.child.pid!;
    const database = new URL(url).pathname.slice(1);
    const results: { postline: Rates; postfix?: Rates }[] = [];
    for (let run = 1; run <= RUNS; run++) {
      const [p, o] = await alternately(
        run,
        () => measure(smtpPort, postline, receiver, sent, { pid, database }),
        postfix && (() => measure(postfix.port, other, receiver, sent, { pid })),
      );
      sent += MESSAGES;
      results.push({ postline: p, postfix: o });
      console.log(
        `run ${run}: ${MESSAGES} messages, ${SESSIONS} sessions, ${MESSAGE_BYTES} B: Postline ${figures(p)} (250 after commit; DKIM-signed, delivered)` +
          (o && postfix
            ? `; ${postfix.name} ${figures(o)} (250 after its queue file's fsync): ${ratios(p, o)}`
            : ''),
      );
    }
    // BENCH_RUNS=0: the round trips were counted, nothing was timed.
    if (results.length === 0) return;
    const med = (side: (r: (typeof results)[number]) => Rates) => ({
      accept: median(results.map((r) => side(r).accept)),
      e2e: median(results.map((r) => side(r).e2e)),
      cpu: side(results[0]).cpu && {
        ms: median(results.map((r) => side(r).cpu!.ms)),
        pgMs: median(results.map((r) => side(r).cpu!.pgMs)),
      },
    });
    const p = med((r) => r.postline);
    const o = postfix && med((r) => r.postfix!);
    console.log(
      `MEDIAN SMTP relay (${RUNS} runs alternating, N=${MESSAGES}, ${os.cpus().length} cores): Postline ${figures(p)}` +
        (o && postfix ? `; ${postfix.name} ${figures(o)}; Postline/Postfix ${ratios(p, o)}` : ''),
    );
  } finally {
    await peer?.stop();
    await server.stop();
    receiver.close();
    await dns.close();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
