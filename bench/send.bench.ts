/**
 * `npm run bench:send`: the send path against raw baselines measured in the same run. See bench/README.md.
 *
 * - POST /v1/emails at 50 connections (autocannon): accepted emails/s, p50/p99 latency; baseline: an express
 *   route doing one INSERT per request through `pg`, on the same database, same load.
 * - POST /v1/emails/batch (100 emails a request): emails/s, same baseline (one INSERT per request).
 * - Delivery: live emails accepted → EmailDelivered, messages/s, through the delivery process manager and the
 *   outbound MTA to a local SMTP sink (MX on a loopback DNS server); ceiling: nodemailer sending the same
 *   messages (DKIM-signed too) to the same sink with the same number of connections.
 *
 * Settings: BENCH_SECONDS per HTTP measurement (default 8), BENCH_DELIVERY (emails, default 2000),
 * BENCH_REDIS_URL (rate-limit counters, default redis://127.0.0.1:6379 as the tests; empty: PostgreSQL counters,
 * whose one row per organization serialises the requests), TEST_DATABASE_ADMIN_URL (as the tests).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import express from 'express';
import pg from 'pg';
import { request } from 'undici';
import { startPostline } from '../bin/service.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { createTestDatabaseUrl } from '../test/support/databases.ts';
import { startDnsServer } from '../test/support/dns-server.ts';
import { publishDomainRecords } from '../test/support/domains.ts';
import { startSmtpSink } from '../test/support/smtp-sink.ts';
import { createOrganization } from '../write-side/organizations/commands.ts';
import { cpuMeter, cpuText } from './cpu.ts';
import { measureDelivery } from './delivery.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const DELIVERY = Number(process.env.BENCH_DELIVERY ?? 2000);
const CONNECTIONS = 50;
const MTA_CONNECTIONS = 5;
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

const autocannon = (await import('autocannon' as string)).default as (
  o: Record<string, unknown>,
) => Promise<any>;

const email = (to: string) => ({
  from: 'Acme <hello@acme-bench.test>',
  to: [to],
  subject: 'Your order has shipped',
  html: '<p>Hello, your order <b>#1234</b> is on its way.</p>',
  text: 'Hello, your order #1234 is on its way.',
  tags: ['shipping'],
});

type Meter = ReturnType<typeof cpuMeter>;

/** `perRequest`: emails in one request (for CPU per email). */
async function load(
  meter: Meter,
  url: string,
  key: string | null,
  body: unknown,
  connections: number,
  perRequest = 1,
) {
  const before = meter.sample();
  const r = await autocannon({
    url,
    method: 'POST',
    connections,
    duration: SECONDS,
    headers: { 'content-type': 'application/json', ...(key && { authorization: `Bearer ${key}` }) },
    body: JSON.stringify(body),
  });
  const ok = r['2xx'];
  const cpu = meter.per(before, meter.sample(), Math.max(1, ok * perRequest));
  return { rps: ok / SECONDS, p50: r.latency.p50, p99: r.latency.p99, errors: r.non2xx + r.errors, cpu };
}

/** The baseline: express, one INSERT per request through a pg pool, into a `json` column as Postline's log. */
async function startBaseline(url: string) {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  await pool.query(
    'CREATE TABLE IF NOT EXISTS baseline_emails (id bigserial PRIMARY KEY, body json NOT NULL, created_at timestamptz NOT NULL DEFAULT now())',
  );
  const app = express();
  app.use(express.json({ limit: '5mb' }));
  app.post('/emails', async (req, res) => {
    const { rows } = await pool.query('INSERT INTO baseline_emails (body) VALUES ($1) RETURNING id', [
      JSON.stringify(req.body),
    ]);
    res.json({ id: rows[0].id, status: 'queued' });
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/emails`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await pool.end();
    },
  };
}

const pct = (a: number, b: number) => `${Math.round((a / b) * 100)}%`;

async function main() {
  const { url, drop } = await createTestDatabaseUrl();
  const dataDir = mkdtempSync(join(tmpdir(), 'postline-bench-send-'));
  const dns = await startDnsServer();
  const sink = await startSmtpSink();
  dns.set('rcpt.test', 'MX', [{ exchange: 'mx.rcpt.test', priority: 10 }]);
  dns.set('mx.rcpt.test', 'A', ['127.0.0.1']);
  const config = loadConfig({
    PORT: '0',
    DATABASE_URL: url,
    POSTLINE_DATA_DIR: dataDir,
    POSTLINE_SECRET_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'warn',
    RATE_LIMIT_RPS: '1000000',
    RATE_LIMIT_BATCH_RPS: '1000000',
    DNS_SERVERS: dns.serverAddress,
    OUTBOUND_SMTP_PORT: String(sink.port),
    POSTLINE_MX_HOST: 'mx.postline.test',
    POSTLINE_SPF_INCLUDE: 'spf.postline.test',
    POSTLINE_TRACKING_HOST: 'track.postline.test',
    REDIS_URL,
  });
  const postline = await startPostline(config, { processes: false, log: createLogger('warn') });
  const baseline = await startBaseline(url);
  const meter = cpuMeter(url);
  const results: string[] = [];
  try {
    const org = await createOrganization(postline.services, { name: 'Bench', plan: 'business' });
    await postline.services.readYourWrites.waitFor(['api_keys'], org.position);
    const api = `http://127.0.0.1:${postline.port}/v1`;
    const post = async (path: string, key: string, body: unknown) => {
      const r = await request(`${api}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: r.statusCode, body: (await r.body.json()) as any };
    };

    // A verified live domain: its records on the loopback DNS server, then verify.
    const domain = (await post('/domains', org.liveKey, { name: 'acme-bench.test' })).body;
    publishDomainRecords(dns, domain);
    const verified = await post(`/domains/${domain.id}/verify`, org.liveKey, {});
    if (verified.body.status !== 'verified')
      throw new Error(`domain not verified: ${JSON.stringify(verified.body)}`);

    // 1. Single sends (test key: accepted, never delivered here) vs the baseline.
    await load(meter, `${api}/emails`, org.testKey, email('warmup@rcpt.test'), CONNECTIONS); // warm-up (JIT, pools)
    const base1 = await load(meter, baseline.url, null, email('a@rcpt.test'), CONNECTIONS);
    const send1 = await load(meter, `${api}/emails`, org.testKey, email('a@rcpt.test'), CONNECTIONS);
    results.push(
      `POST /v1/emails, ${CONNECTIONS} connections: ${send1.rps.toFixed(0)} emails/s, p50 ${send1.p50} ms, p99 ${send1.p99} ms` +
        ` (non-2xx ${send1.errors}); baseline ${base1.rps.toFixed(0)} req/s, p50 ${base1.p50} ms, p99 ${base1.p99} ms -> ${pct(send1.rps, base1.rps)} of baseline; CPU per email ${cpuText(send1.cpu)}, baseline ${cpuText(base1.cpu)}`,
    );

    // 2. Batches of 100.
    const batch = Array.from({ length: 100 }, (_, i) => email(`b${i}@rcpt.test`));
    const baseB = await load(meter, baseline.url, null, batch, 10, 100);
    const sendB = await load(meter, `${api}/emails/batch`, org.testKey, batch, 10, 100);
    results.push(
      `POST /v1/emails/batch (100 per request), 10 connections: ${(sendB.rps * 100).toFixed(0)} emails/s, p50 ${sendB.p50} ms, p99 ${sendB.p99} ms` +
        `; baseline (one INSERT of the whole body per request) ${baseB.rps.toFixed(0)} req/s; CPU per email ${cpuText(sendB.cpu)}, baseline ${cpuText(baseB.cpu)}`,
    );

    // 3. Delivery: live emails, accepted first, then delivered by the process manager through the MTA.
    results.push(
      await measureDelivery({
        postline,
        sink,
        post,
        liveKey: org.liveKey,
        domainId: domain.id,
        count: DELIVERY,
        connections: MTA_CONNECTIONS,
        email,
        meter,
      }),
    );
  } finally {
    await baseline.close();
    await postline.close();
    await sink.close();
    await dns.close();
    rmSync(dataDir, { recursive: true, force: true });
    await drop();
  }
  const header =
    `Machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}, load average ${os.loadavg()[0].toFixed(1)}, Node ${process.version}, ` +
    `${new Date().toISOString().slice(0, 10)}; rate-limit counters in ${REDIS_URL ? 'Redis' : 'PostgreSQL'}`;
  process.stdout.write(`${header}\n${results.map((r) => `- ${r}`).join('\n')}\n`);
}

function tmpdir() {
  return os.tmpdir();
}

await main();
