/**
 * `npm run bench:webhooks`: webhook events fanned out, signed and delivered per second to a local receiver, against
 * a raw baseline measured in the same run.
 *
 * - Postline: a log seeded with BENCH_EMAILS emails (EmailQueued, EmailSent, EmailDelivered each), one endpoint
 *   subscribed to `email.*`; from the moment the fan-out and the dispatcher start until every delivery is recorded
 *   as succeeded: the fan-out reads the log, reads each email's first event, records the deliveries; the
 *   dispatcher claims them, signs them (Standard Webhooks) and POSTs them, and records every attempt.
 * - Baseline: undici `request` POSTs of the very same bodies to the same receiver at the same concurrency
 *   (an Agent with as many connections), nothing else.
 * The receiver runs in a worker thread and answers 204; a sample of deliveries is verified with the
 * `standardwebhooks` package afterwards. Settings: BENCH_EMAILS (default 2500 -> 5000 deliveries),
 * BENCH_CONCURRENCY (default 64), TEST_DATABASE_ADMIN_URL (as the tests). See bench/README.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import { startPostline } from '../bin/service.ts';
import { loadConfig } from '../platform/config.ts';
import { connectPostgres } from '../platform/db/database.ts';
import { newId } from '../platform/ids.ts';
import { createLogger } from '../platform/logger.ts';
import { WebhookDispatcher } from '../processes/webhooks/dispatcher.process.ts';
import { WebhookFanOut } from '../processes/webhooks/fan-out.process.ts';
import { createTestDatabaseUrl } from '../test/support/databases.ts';
import { createOrganization } from '../write-side/organizations/commands.ts';
import { createWebhook } from '../write-side/webhooks/commands.ts';

const EMAILS = Number(process.env.BENCH_EMAILS ?? 2500);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const DELIVERIES = EMAILS * 2;

const RECEIVER = `
const { parentPort } = require('node:worker_threads');
const http = require('node:http');
let count = 0;
const samples = [];
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    count++;
    if (req.headers['webhook-signature'] && samples.length < 50 && count % 20 === 0) {
      samples.push({ body: Buffer.concat(chunks).toString(), headers: {
        'webhook-id': req.headers['webhook-id'], 'webhook-timestamp': req.headers['webhook-timestamp'],
        'webhook-signature': req.headers['webhook-signature'] } });
    }
    res.writeHead(204);
    res.end();
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));
parentPort.on('message', (m) => {
  if (m === 'stats') parentPort.postMessage({ count, samples });
  if (m === 'reset') { count = 0; samples.length = 0; parentPort.postMessage({ ok: true }); }
  if (m === 'close') server.close(() => process.exit(0));
});`;

function startReceiver() {
  const worker = new Worker(RECEIVER, { eval: true });
  const ask = (m: string) => new Promise<any>((resolve) => worker.once('message', resolve).postMessage(m));
  return new Promise<{ port: number; ask: typeof ask; close: () => void }>((resolve) =>
    worker.once('message', ({ port }) => resolve({ port, ask, close: () => worker.postMessage('close') })),
  );
}

/**
 * CPU seconds used so far by the PostgreSQL backends serving `database` (Linux /proc; 0 elsewhere): with the
 * Node process's own, it shows where the time goes. Backends that exit meanwhile are not counted.
 */
function postgresCpu(database: string): Map<string, number> {
  const out = new Map<string, number>();
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return out;
  }
  for (const pid of pids) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(` ${database} `)) continue;
      const fields = readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1].split(' ');
      out.set(pid, (Number(fields[11]) + Number(fields[12])) / 100); // utime + stime, in clock ticks
    } catch {}
  }
  return out;
}

/** CPU seconds of the Node process (all threads) and of the database's backends since `start()`. */
function cpuMeter(database: string) {
  const node = process.cpuUsage();
  const pg = postgresCpu(database);
  return () => {
    const { user, system } = process.cpuUsage(node);
    let db = 0;
    for (const [pid, s] of postgresCpu(database)) db += s - (pg.get(pid) ?? 0);
    return { node: (user + system) / 1e6, db };
  };
}

async function seed(services: any, orgId: string) {
  const meta = { orgId, mode: 'live' as const, actor: 'system' };
  const at = new Date().toISOString();
  for (let i = 0; i < EMAILS; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, EMAILS - i) }, async () => {
        const emailId = newId('em');
        const queued = {
          emailId,
          orgId,
          mode: 'live',
          from: 'Acme <hello@acme.example>',
          to: ['someone@example.com'],
          cc: [],
          bcc: [],
          replyTo: [],
          subject: 'Your order has shipped',
          html: '<p>Hello, your order <b>#1234</b> is on its way.</p>',
          text: 'Hello, your order #1234 is on its way.',
          headers: {},
          tags: ['shipping'],
          attachments: [],
          domainId: null,
          domainName: 'acme.example',
          suppressedRecipients: [],
          createdAt: at,
        };
        await services.store.append(
          `email-${emailId}`,
          [
            { type: 'EmailQueued', data: queued, metadata: meta },
            {
              type: 'EmailSent',
              data: { emailId, messageId: `<${emailId}@acme.example>`, sentAt: at },
              metadata: meta,
            },
            {
              type: 'EmailDelivered',
              data: {
                emailId,
                recipient: 'someone@example.com',
                smtpResponse: '250 2.0.0 OK',
                deliveredAt: at,
              },
              metadata: meta,
            },
          ],
          { expectedRevision: 'no_stream' },
        );
      }),
    );
  }
}

async function baseline(url: string, bodies: string[]): Promise<number> {
  const agent = new Agent({ connections: CONCURRENCY });
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < bodies.length) {
        const body = bodies[next++];
        const res = await request(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
          dispatcher: agent,
        });
        await res.body.dump();
        if (res.statusCode !== 204) throw new Error(`baseline got ${res.statusCode}`);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await agent.close();
  return bodies.length / seconds;
}

async function main() {
  const { url, drop } = await createTestDatabaseUrl();
  const dataDir = mkdtempSync(join(os.tmpdir(), 'postline-bench-'));
  const receiver = await startReceiver();
  const hookUrl = `http://127.0.0.1:${receiver.port}/hooks`;
  const config = loadConfig({
    PORT: '0',
    DATABASE_URL: url,
    POSTLINE_DATA_DIR: dataDir,
    POSTLINE_SECRET_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'silent',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  });
  const db = connectPostgres(url, 20);
  const postline = await startPostline(config, {
    db,
    http: false,
    processes: false,
    projections: false,
    log: createLogger('warn'),
  });
  const { services } = postline;
  try {
    const org = await createOrganization(services, { name: 'Bench', plan: 'business' });
    const { secret } = await createWebhook(
      services,
      { orgId: org.orgId, mode: 'live', actor: 'cli' },
      'business',
      0,
      {
        url: hookUrl,
        events: ['email.*'],
        active: true,
      },
    );
    process.stdout.write(`seeding ${EMAILS} emails (${EMAILS * 3} events)... `);
    await seed(services, org.orgId);
    console.log('done');

    const fanOut = new WebhookFanOut(services);
    const dispatcher = new WebhookDispatcher(services, {
      concurrency: CONCURRENCY,
      perEndpoint: CONCURRENCY,
    });
    const expected = DELIVERIES + 1; // and the test event sent on creation
    const database = new URL(url).pathname.slice(1);
    const cpuSince = cpuMeter(database);
    const started = performance.now();
    let fannedOutAt = 0;
    fanOut.start();
    dispatcher.start();
    for (;;) {
      const { rows } = await db.query<{ total: number; done: number }>(
        `SELECT count(*)::int AS total, count(*) FILTER (WHERE status = 'succeeded')::int AS done FROM webhook_deliveries`,
      );
      if (!fannedOutAt && rows[0].total >= expected) fannedOutAt = performance.now();
      if (rows[0].done >= expected) break;
      if (rows[0].total > expected) throw new Error('more deliveries than expected');
      await new Promise((r) => setTimeout(r, 50));
    }
    const seconds = (performance.now() - started) / 1000;
    const postlineCpu = cpuSince();
    await fanOut.stop();
    await dispatcher.stop();
    const postlineRate = expected / seconds;

    const { samples, count } = await receiver.ask('stats');
    if (count < expected) throw new Error(`receiver saw ${count} of ${expected}`);
    for (const s of samples) new Webhook(secret).verify(s.body, s.headers); // throws unless signed right
    const { rows: bodies } = await db.query<{ body: string }>(
      `SELECT body FROM webhook_deliveries ORDER BY id`,
    );
    await receiver.ask('reset');
    const raw: { rate: number; cpu: number }[] = [];
    for (let i = 0; i < 2; i++) {
      const rawCpuSince = cpuMeter(database);
      const rate = await baseline(
        hookUrl,
        bodies.map((b) => b.body),
      );
      raw.push({ rate, cpu: rawCpuSince().node });
    }
    const best = raw.reduce((a, b) => (b.rate > a.rate ? b : a));
    const rawRate = best.rate;

    const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
    console.log(
      `\n${os.cpus().length} x ${cpu}, Node ${process.version}, PostgreSQL (local), concurrency ${CONCURRENCY}`,
    );
    console.log(`| measurement | deliveries | per second | vs. raw |`);
    console.log(`|---|---:|---:|---:|`);
    console.log(
      `| Postline fan-out + signed dispatch (log -> receiver, all recorded) | ${expected} | ${postlineRate.toFixed(0)} | ${((100 * postlineRate) / rawRate).toFixed(0)} % |`,
    );
    console.log(
      `| of which fan-out alone (log -> delivery rows) | ${expected} | ${(expected / ((fannedOutAt - started) / 1000)).toFixed(0)} | |`,
    );
    console.log(
      `| raw undici request POSTs, same bodies (best of 2) | ${bodies.length} | ${rawRate.toFixed(0)} | 100 % |`,
    );
    console.log(
      `\nCPU seconds: Postline ${seconds.toFixed(2)} s wall, Node ${postlineCpu.node.toFixed(2)} s (with the receiver), PostgreSQL ${postlineCpu.db.toFixed(2)} s; raw ${(expected / rawRate).toFixed(2)} s wall, Node ${best.cpu.toFixed(2)} s (with the receiver)`,
    );
    console.log(`signatures verified with standardwebhooks: ${samples.length} sampled deliveries`);
  } finally {
    await postline.close();
    await db.close();
    receiver.close();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
