/**
 * `npm run bench:smtp`: the SMTP relay under the load Postfix's `smtp-source` puts on a relay (8 sessions, many
 * messages per connection, no pipelining, about 3 KB a message), with AUTH. Postline runs as `npm start` runs it
 * (a process of its own, PostgreSQL, every process manager); the receiving server is another process, found
 * through the MX of a loopback DNS server. Measured:
 *
 * - accept: messages/s answered `250` (each after its events are committed);
 * - end to end: messages/s from the first MAIL to the receiver's acceptance of the last one, DKIM-signed.
 *
 * Compare with Postfix on the same shape of work, measured one after the other on the same machine (see
 * bench/README.md). Settings: BENCH_MESSAGES (default 5000), BENCH_SESSIONS (8), BENCH_MESSAGE_BYTES (3000),
 * BENCH_RUNS (3), BENCH_REDIS_URL (default redis://127.0.0.1:6379), TEST_DATABASE_ADMIN_URL (as the tests).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createTestDatabaseUrl } from '../test/support/databases.ts';
import { startDnsServer } from '../test/support/dns-server.ts';
import { recipientDomainOnLoopback } from '../test/support/domains.ts';
import { freePort, startServer } from '../test/support/process.ts';
import { authPlain, type RawSmtp, rawSmtp } from '../test/support/raw-smtp.ts';
import { organizationWithDomain } from './verified-domain.ts';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 5000);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 8);
const MESSAGE_BYTES = Number(process.env.BENCH_MESSAGE_BYTES ?? 3000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A message of about MESSAGE_BYTES, in lines of 76 characters as a mail client writes them. */
function message(i: number): string {
  const head = `From: Acme <hello@acme-bench.test>\r\nTo: r${i}@rcpt.test\r\nSubject: Your order ${i} has shipped\r\n\r\n`;
  const line = `${'Your order is on its way. '.repeat(3).slice(0, 76)}\r\n`;
  return `${head}${line.repeat(Math.max(1, Math.round((MESSAGE_BYTES - head.length) / line.length)))}.\r\n`;
}

/** The receiving server's process: resolves its port; `until(n)` resolves when it has accepted n messages. */
async function startReceiver() {
  const child: ChildProcess = fork(join(import.meta.dirname, 'smtp-sink.process.ts'), { stdio: 'inherit' });
  let count = 0;
  let waiting: { n: number; resolve: (at: number) => void } | undefined;
  const port = await new Promise<number>((resolve) =>
    child.on('message', (m: { port?: number; count?: number }) => {
      if (m.port) resolve(m.port);
      if (m.count !== undefined) {
        count = m.count;
        if (waiting && count >= waiting.n) waiting.resolve(performance.now());
      }
    }),
  );
  return {
    port,
    count: () => count,
    until: (n: number) =>
      new Promise<number>((resolve) => {
        if (count >= n) resolve(performance.now());
        else waiting = { n, resolve };
      }),
    close: () => child.kill(),
  };
}

async function expectReply(c: RawSmtp, line: string | null, code: number) {
  const reply = line === null ? await c.reply() : await c.command(line);
  if (reply.code !== code) throw new Error(`${line ?? 'DATA'}: ${reply.code} ${reply.text}`);
}

/** One session as smtp-source's: AUTH once, then its messages one after the other on the same connection. */
async function session(port: number, key: string, messages: number[]) {
  const c = await rawSmtp(port);
  await expectReply(c, 'EHLO bench.test', 250);
  await expectReply(c, `AUTH PLAIN ${authPlain(key)}`, 235);
  for (const i of messages) {
    await expectReply(c, 'MAIL FROM:<hello@acme-bench.test>', 250);
    await expectReply(c, `RCPT TO:<r${i}@rcpt.test>`, 250);
    await expectReply(c, 'DATA', 354);
    c.write(message(i));
    await expectReply(c, null, 250);
  }
  await c.command('QUIT');
  c.close();
}

async function load(port: number, key: string, first: number, count: number) {
  const shares = Array.from({ length: SESSIONS }, (_, s) =>
    Array.from({ length: count }, (_, i) => first + i).filter((_, i) => i % SESSIONS === s),
  );
  await Promise.all(shares.map((share) => session(port, key, share)));
}

async function main() {
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
  const server = await startServer(env);
  try {
    const key = await organizationWithDomain(env, httpPort, dns, 'acme-bench.test');

    // Warm-up: connections, caches, the JIT.
    let sent = 0;
    await load(smtpPort, key, sent, 200);
    sent += 200;
    await receiver.until(sent);

    const results: { accept: number; e2e: number }[] = [];
    for (let run = 1; run <= RUNS; run++) {
      const t0 = performance.now();
      await load(smtpPort, key, sent, MESSAGES);
      const t1 = performance.now();
      sent += MESSAGES;
      const t2 = await receiver.until(sent);
      const r = { accept: MESSAGES / ((t1 - t0) / 1000), e2e: MESSAGES / ((t2 - t0) / 1000) };
      results.push(r);
      console.log(
        `run ${run}: ${MESSAGES} messages, ${SESSIONS} sessions, ${MESSAGE_BYTES} B: accept ${r.accept.toFixed(0)} msg/s (250 after commit), end to end ${r.e2e.toFixed(0)} msg/s (DKIM-signed, delivered)`,
      );
    }
    const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log(
      `MEDIAN Postline SMTP relay (${RUNS} runs, N=${MESSAGES}, ${os.cpus().length} cores): accept ${median(results.map((r) => r.accept)).toFixed(0)} msg/s, end to end ${median(results.map((r) => r.e2e)).toFixed(0)} msg/s`,
    );
  } finally {
    await server.stop();
    receiver.close();
    await dns.close();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
