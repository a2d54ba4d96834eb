/**
 * `npm run bench:mx`: the inbound MX under the load Postfix's `smtp-source` puts on an MX (8 sessions, many
 * messages per connection, no pipelining), each message about 3 KB with a small attachment, for an inbound
 * domain. Postline runs as `npm start` runs it (a process of its own, PostgreSQL, every process manager). Measured:
 * messages/s answered `250`, which the MX says only once the message is parsed, authenticated (SPF, DKIM, DMARC
 * against a loopback DNS server), its raw bytes, content and attachment written and synced, and its event
 * committed; and the CPU per message of Postline's process and its PostgreSQL backends.
 *
 * Compare with Haraka as an MX on the same load, measured one after the other on the same machine (see
 * bench/README.md). Settings: BENCH_MESSAGES (default 5000), BENCH_SESSIONS (8), BENCH_MESSAGE_BYTES (3000),
 * BENCH_RUNS (3), TEST_DATABASE_ADMIN_URL (as the tests).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createTestDatabaseUrl } from '../test/support/databases.ts';
import { startDnsServer } from '../test/support/dns-server.ts';
import { freePort, startServer } from '../test/support/process.ts';
import { type RawSmtp, rawSmtp } from '../test/support/raw-smtp.ts';
import { postgresCpu, postgresCpuSince } from './cpu.ts';
import { organizationWithDomain } from './verified-domain.ts';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 5000);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 8);
const MESSAGE_BYTES = Number(process.env.BENCH_MESSAGE_BYTES ?? 3000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const DOMAIN = 'acme-in.test';

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

async function expectReply(c: RawSmtp, line: string | null, code: number) {
  const reply = line === null ? await c.reply() : await c.command(line);
  if (reply.code !== code) throw new Error(`${line ?? 'DATA'}: ${reply.code} ${reply.text}`);
}

/** One session as smtp-source's: its messages one after the other on the same connection. */
async function session(port: number, messages: number[]) {
  const c = await rawSmtp(port);
  await expectReply(c, 'EHLO mx.remote.test', 250);
  for (const i of messages) {
    await expectReply(c, 'MAIL FROM:<ann@remote.test>', 250);
    await expectReply(c, `RCPT TO:<support@${DOMAIN}>`, 250);
    await expectReply(c, 'DATA', 354);
    c.write(message(i));
    await expectReply(c, null, 250);
  }
  await c.command('QUIT');
  c.close();
}

async function load(port: number, first: number, count: number) {
  const shares = Array.from({ length: SESSIONS }, (_, s) =>
    Array.from({ length: count }, (_, i) => first + i).filter((_, i) => i % SESSIONS === s),
  );
  await Promise.all(shares.map((share) => session(port, share)));
}

/** CPU seconds a process has used so far (utime + stime), from /proc. */
function processCpu(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function main() {
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
  const server = await startServer(env);
  try {
    await organizationWithDomain(env, httpPort, dns, DOMAIN, { inbound_enabled: true });

    // Warm-up: connections, caches, the JIT.
    let sent = 0;
    await load(mxPort, sent, 200);
    sent += 200;

    const pid = server.child.pid!;
    const results: { rate: number; cpuMs: number }[] = [];
    for (let run = 1; run <= RUNS; run++) {
      const cpu0 = { node: processCpu(pid), pg: postgresCpu(database) };
      const t0 = performance.now();
      await load(mxPort, sent, MESSAGES);
      const t1 = performance.now();
      const cpu = processCpu(pid) - cpu0.node + postgresCpuSince(cpu0.pg, postgresCpu(database));
      sent += MESSAGES;
      const r = { rate: MESSAGES / ((t1 - t0) / 1000), cpuMs: (cpu * 1000) / MESSAGES };
      results.push(r);
      console.log(
        `run ${run}: ${MESSAGES} messages, ${SESSIONS} sessions, ${message(0).length} B: ${r.rate.toFixed(0)} msg/s received (250 after parse, authentication, fsync and commit), CPU ${r.cpuMs.toFixed(2)} ms per message (Postline + PostgreSQL)`,
      );
    }
    const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log(
      `MEDIAN Postline MX (${RUNS} runs, N=${MESSAGES}, ${os.cpus().length} cores): ${median(results.map((r) => r.rate)).toFixed(0)} msg/s, CPU ${median(results.map((r) => r.cpuMs)).toFixed(2)} ms per message`,
    );
  } finally {
    await server.stop();
    await dns.close();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
