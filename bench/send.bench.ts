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
 * - Lanes: transactional sends from two organizations while one's broadcast backlog of 20,000 waits for a slow
 *   destination, against the same sends on an idle queue (bench/lanes.ts).
 *
 * - Embedded: `npm start` as a process of its own with its process managers, on its embedded PostgreSQL (no
 *   DATABASE_URL) and on the machine's PostgreSQL: POST /v1/emails at 50 connections, resident memory once ready
 *   and under load, BENCH_ROUNDS rounds but at least 3, and the medians against the aims (bench/embedded.ts).
 *
 * Settings: BENCH_PARTS (default `single,batch,delivery,lanes,embedded`: which measurements run),
 * BENCH_SECONDS per HTTP measurement (default 8), BENCH_DELIVERY (emails, default 2000),
 * BENCH_REDIS_URL (rate-limit counters, default redis://127.0.0.1:6379 as the tests; empty: PostgreSQL counters,
 * whose one row per organization serialises the requests), TEST_DATABASE_ADMIN_URL (as the tests).
 */
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import express from 'express';
import pg from 'pg';
import { request } from 'undici';
import { startPostline } from '../bin/service.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { startDnsServer } from '../test/support/dns-server.ts';
import { publishDomainRecords, recipientDomainOnLoopback } from '../test/support/domains.ts';
import { startSmtpSink } from '../test/support/smtp-sink.ts';
import { createOrganization } from '../write-side/organizations/organization.commands.ts';
import { benchDatabase } from './bench-database.ts';
import { cpuMeter, cpuText } from './cpu.ts';
import { measureDelivery } from './delivery.ts';
import { measureEmbedded } from './embedded.ts';
import { measureLanes } from './lanes.ts';
import { emailsWrittenAhead } from './writes-ahead.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
/** Each HTTP measurement alternates baseline and Postline this many times, SECONDS / ROUNDS each. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const DELIVERY = Number(process.env.BENCH_DELIVERY ?? 2000);
const CONNECTIONS = 50;
const MTA_CONNECTIONS = 5;
const pct = (a: number, b: number) => `${Math.round((a / b) * 100)}%`;

const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PARTS = new Set((process.env.BENCH_PARTS ?? 'single,batch,delivery,lanes,embedded').split(','));

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

interface Target {
  url: string;
  key: string | null;
}

/** Of the requests of a comparison (`rps` over SECONDS), the share that wrote ahead since `before` was read. */
async function writtenAheadShare(before: number, rps: number): Promise<string> {
  return pct((await emailsWrittenAhead()) - before, rps * SECONDS);
}

/** One load of `seconds`; `perRequest`: emails in one request (for CPU per email). */
async function load(
  meter: Meter,
  t: Target,
  body: unknown,
  connections: number,
  seconds: number,
  perRequest = 1,
) {
  const before = meter.sample();
  const r = await autocannon({
    url: t.url,
    method: 'POST',
    connections,
    duration: seconds,
    headers: { 'content-type': 'application/json', ...(t.key && { authorization: `Bearer ${t.key}` }) },
    body: JSON.stringify(body),
  });
  const ok = r['2xx'];
  const cpu = meter.per(before, meter.sample(), Math.max(1, ok * perRequest));
  return { rps: ok / seconds, p50: r.latency.p50, p99: r.latency.p99, errors: r.non2xx + r.errors, cpu };
}
type Load = Awaited<ReturnType<typeof load>>;

/** Rounds of one side summed up: requests/s over all, the worst round's p50 and p99, CPU weighted by requests. */
function overall(rounds: Load[]): Load {
  const rps = rounds.reduce((s, r) => s + r.rps, 0) / rounds.length;
  const weighted = (f: (r: Load) => number) =>
    rounds.reduce((s, r) => s + f(r) * r.rps, 0) / (rps * rounds.length);
  const pg = rounds.every((r) => r.cpu.pg !== null) ? weighted((r) => r.cpu.pg!) : null;
  const node = weighted((r) => r.cpu.node);
  return {
    rps,
    p50: Math.max(...rounds.map((r) => r.p50)),
    p99: Math.max(...rounds.map((r) => r.p99)),
    errors: rounds.reduce((s, r) => s + r.errors, 0),
    cpu: { node, pg, total: node + (pg ?? 0) },
  };
}

/**
 * Baseline and Postline in alternating rounds, so that a slow moment of the (shared) machine does not favour
 * either; the ratio of each round besides the overall one.
 */
async function compare(
  meter: Meter,
  base: Target,
  postline: Target,
  body: unknown,
  connections: number,
  perRequest = 1,
) {
  const baseRounds: Load[] = [];
  const postlineRounds: Load[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    baseRounds.push(await load(meter, base, body, connections, SECONDS / ROUNDS, perRequest));
    postlineRounds.push(await load(meter, postline, body, connections, SECONDS / ROUNDS, perRequest));
  }
  const rounds = postlineRounds.map((r, i) => pct(r.rps, baseRounds[i].rps)).join(', ');
  return { base: overall(baseRounds), postline: overall(postlineRounds), rounds };
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

/** Single sends, batches and delivery: Postline in this process on a fresh PostgreSQL database. */
async function inProcess(results: string[]) {
  const { url, env, dispose } = await benchDatabase('send');
  const dns = await startDnsServer();
  const sink = await startSmtpSink();
  recipientDomainOnLoopback(dns);
  const config = loadConfig({
    ...env,
    DNS_SERVERS: dns.serverAddress,
    OUTBOUND_SMTP_PORT: String(sink.port),
    POSTLINE_MX_HOST: 'mx.postline.test',
    POSTLINE_SPF_INCLUDE: 'spf.postline.test',
    POSTLINE_TRACKING_HOST: 'track.postline.test',
    REDIS_URL,
  });
  const postline = await startPostline(config, { processes: false, smtp: false, log: createLogger('warn') });
  const baseline = await startBaseline(url);
  const meter = cpuMeter(url);
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
    const base = { url: baseline.url, key: null };
    const single = { url: `${api}/emails`, key: org.testKey };
    if (PARTS.has('single')) {
      await load(meter, single, email('warmup@rcpt.test'), CONNECTIONS, SECONDS); // warm-up (JIT, pools)
      const ahead = await emailsWrittenAhead();
      const s = await compare(meter, base, single, email('a@rcpt.test'), CONNECTIONS);
      results.push(
        `POST /v1/emails, ${CONNECTIONS} connections: ${s.postline.rps.toFixed(0)} emails/s, p50 ${s.postline.p50} ms, p99 ${s.postline.p99} ms` +
          ` (non-2xx ${s.postline.errors}); baseline ${s.base.rps.toFixed(0)} req/s, p50 ${s.base.p50} ms, p99 ${s.base.p99} ms -> ${pct(s.postline.rps, s.base.rps)} of baseline (rounds ${s.rounds}); CPU per email ${cpuText(s.postline.cpu)}, baseline ${cpuText(s.base.cpu)}` +
          `; ${await writtenAheadShare(ahead, s.postline.rps)} of the sends wrote their row ahead of the read model`,
      );
    }

    // 2. Batches of 100.
    if (PARTS.has('batch')) {
      const batch = Array.from({ length: 100 }, (_, i) => email(`b${i}@rcpt.test`));
      const b = await compare(meter, base, { url: `${api}/emails/batch`, key: org.testKey }, batch, 10, 100);
      results.push(
        `POST /v1/emails/batch (100 per request), 10 connections: ${(b.postline.rps * 100).toFixed(0)} emails/s, p50 ${b.postline.p50} ms, p99 ${b.postline.p99} ms` +
          `; baseline (one INSERT of the whole body per request) ${b.base.rps.toFixed(0)} req/s; CPU per email ${cpuText(b.postline.cpu)}, baseline ${cpuText(b.base.cpu)}`,
      );
    }

    // 3. Delivery: live emails, accepted first, then delivered by the process manager through the MTA.
    if (PARTS.has('delivery'))
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
    await dispose();
  }
}

async function main() {
  const results: string[] = [];
  if (['single', 'batch', 'delivery'].some((p) => PARTS.has(p))) await inProcess(results);
  if (PARTS.has('lanes')) results.push(...(await measureLanes({ redisUrl: REDIS_URL })));
  if (PARTS.has('embedded'))
    results.push(
      ...(await measureEmbedded({
        seconds: SECONDS,
        rounds: ROUNDS,
        body: email('a@rcpt.test'),
        autocannon,
      })),
    );
  const header =
    `Machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}, load average ${os.loadavg()[0].toFixed(1)}, Node ${process.version}, ` +
    `${new Date().toISOString().slice(0, 10)}; rate-limit counters in ${REDIS_URL ? 'Redis' : 'PostgreSQL'} (the npm start runs: none configured, so in PostgreSQL, the embedded one too)`;
  process.stdout.write(`${header}\n${results.map((r) => `- ${r}`).join('\n')}\n`);
}

await main();
