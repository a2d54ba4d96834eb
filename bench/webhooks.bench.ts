/**
 * `npm run bench:webhooks`: webhook deliveries per second, log to receiver, in two scenarios (BENCH_SCENARIO=fast,
 * slow or both, the default). See bench/README.md.
 *
 * Fast receiver: against a raw baseline measured in the same run.
 * - Postline: a log seeded with BENCH_EMAILS emails (EmailQueued, EmailSent, EmailDelivered each) for one
 *   organization with one endpoint subscribed to `email.*`; with the dispatcher running, from the moment the
 *   fan-out starts until every delivery is recorded as succeeded: the fan-out reads the log, builds the payloads
 *   and records them with its checkpoint; the dispatcher claims them, signs them (Standard Webhooks), POSTs them
 *   and records every outcome.
 * - Baseline: undici `request` POSTs of the very same requests (bodies, and the headers Postline sent, signed
 *   beforehand) to the same receiver at the same concurrency (an Agent with as many connections), nothing else.
 * The two take turns in BENCH_ROUNDS (default 5) rounds, each over freshly seeded emails, each side's run after
 * a pause of a second, the baseline's over the round's requests twice (so that both runs last about as long);
 * the figure is the median of the rounds' ratios (each round's is printed too).
 * Both sides are warmed up first, so that neither is timed while its code is still being compiled: Postline by
 * BENCH_WARM_UP_ROUNDS (default 3) rounds of BENCH_WARM_UP_EMAILS (default: as many as measured) through the same
 * pipeline, the baseline by three untimed runs over the same requests (until then it speeds up from run to run);
 * each side then pauses a second for V8's background compilation. The receiver runs in a worker thread and
 * answers 204; a sample of deliveries is verified with the `standardwebhooks` package afterwards. CPU time is
 * given by thread. Settings: BENCH_EMAILS (default 2500 -> 5000
 * deliveries), BENCH_ROUNDS, BENCH_CONCURRENCY (default 64), BENCH_TRACE=1 (requests received and machine CPU
 * every 25 ms of each measured round), TEST_DATABASE_ADMIN_URL (as the tests).
 *
 * Realistic receivers: 100 endpoints (100 organizations, one endpoint each, on servers of their own) that answer
 * after 20 to 80 ms (uniformly drawn), the dispatcher with its service settings (64 requests in flight, 16 per
 * endpoint): BENCH_SLOW_EMAILS (default 1500 -> 3000 deliveries) a round, BENCH_SLOW_ROUNDS (default 3) rounds
 * after one warm-up round, each against the bound the concurrency sets (64 requests in flight / 50 ms on average).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import { startPostline } from '../bin/service.ts';
import { emailStream } from '../domain/emails/email.events.ts';
import { loadConfig } from '../platform/config.ts';
import { connectPostgres } from '../platform/db/database.ts';
import { newId } from '../platform/ids.ts';
import { createLogger } from '../platform/logger.ts';
import { WebhookDispatcher } from '../processes/webhooks/dispatcher.process.ts';
import { FAN_OUT_NAME, WebhookFanOut } from '../processes/webhooks/fan-out.process.ts';
import { signatureHeader } from '../processes/webhooks/signer.ts';
import { createTestDatabaseUrl } from '../test/support/databases.ts';
import { createOrganization } from '../write-side/organizations/organization.commands.ts';
import { createWebhook } from '../write-side/webhooks/webhook.commands.ts';
import { postgresCpu, postgresCpuSince } from './cpu.ts';

const EMAILS = Number(process.env.BENCH_EMAILS ?? 2500);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const DELIVERIES = EMAILS * 2;
const WARM_UP = Number(process.env.BENCH_WARM_UP_EMAILS ?? EMAILS);
const WARM_UP_ROUNDS = Number(process.env.BENCH_WARM_UP_ROUNDS ?? 3);
const RAW_WARM_UP_RUNS = 3;
/** Measured rounds, each side's alternating with the other's. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** `fast` (one receiver answering at once, against raw undici), `slow` (realistic receivers), or both. */
const SCENARIOS = process.env.BENCH_SCENARIO ?? 'fast,slow';
const SLOW_EMAILS = Number(process.env.BENCH_SLOW_EMAILS ?? 1500);
const SLOW_ROUNDS = Number(process.env.BENCH_SLOW_ROUNDS ?? 3);
/** The dispatcher's requests in flight as the service runs it (its default). */
const CONCURRENCY_OF_SERVICE = 64;
/**
 * A pause after the warm-ups (V8 compiles optimized code in background threads, starved on a busy machine) and
 * before each measured run, the same for both sides.
 */
const compiled = () => new Promise((r) => setTimeout(r, 1000));

const RECEIVER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const seen = new Int32Array(workerData.seen);
let count = 0;
let target = Infinity;
const samples = [];
const [minMs, maxMs] = workerData.delayMs;
const answer = (res) => {
  res.writeHead(204);
  res.end();
};
const servers = Array.from({ length: workerData.servers }, () => http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    Atomics.store(seen, 0, ++count);
    if (count === target) parentPort.postMessage('reached');
    if (req.headers['webhook-signature'] && samples.length < 50 && count % 20 === 0) {
      samples.push({ body: Buffer.concat(chunks).toString(), headers: {
        'webhook-id': req.headers['webhook-id'], 'webhook-timestamp': req.headers['webhook-timestamp'],
        'webhook-signature': req.headers['webhook-signature'] } });
    }
    if (maxMs === 0) answer(res);
    else setTimeout(answer, minMs + Math.random() * (maxMs - minMs), res);
  });
}));
const ports = [];
for (const server of servers) {
  server.keepAliveTimeout = 60000;
  server.listen(0, '127.0.0.1', () => {
    ports.push(server.address().port);
    if (ports.length === servers.length) parentPort.postMessage({ ports });
  });
}
parentPort.on('message', (m) => {
  if (m === 'stats') parentPort.postMessage({ count, samples });
  if (typeof m === 'number') target = m; // tell when that many requests came in
  if (m === 'cpu') { const { user, system } = process.threadCpuUsage(); parentPort.postMessage((user + system) / 1e6); }
  if (m === 'reset') { count = 0; target = Infinity; samples.length = 0; parentPort.postMessage({ ok: true }); }
  if (m === 'close') process.exit(0);
});`;

/** `servers` HTTP servers in a worker thread, each answering 204 after `delayMs` (drawn between the two). */
function startReceiver(servers = 1, delayMs: [number, number] = [0, 0]) {
  const seen = new SharedArrayBuffer(4);
  const worker = new Worker(RECEIVER, { eval: true, workerData: { seen, servers, delayMs } });
  const ask = (m: string | number) =>
    new Promise<any>((resolve) => worker.once('message', resolve).postMessage(m));
  const count = () => Atomics.load(new Int32Array(seen), 0);
  return new Promise<Receiver>((resolve) =>
    worker.once('message', ({ ports }) =>
      resolve({ port: ports[0], ports, ask, count, close: () => worker.postMessage('close') }),
    ),
  );
}

interface Receiver {
  port: number;
  ports: number[];
  ask: (m: string | number) => Promise<any>;
  count: () => number;
  close: () => void;
}

/** Busy and total jiffies of the whole machine (all cores), from /proc/stat. */
function machineCpu() {
  const f = readFileSync('/proc/stat', 'latin1').split('\n')[0].split(/\s+/).slice(1).map(Number);
  const idle = f[3] + f[4];
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

/**
 * CPU seconds since the call, by thread: the main thread, the receiver's, the rest of the Node process (V8's
 * compiler and GC helpers, libuv), and the database's backends.
 */
async function cpuMeter(database: string, receiverCpu: () => Promise<number>) {
  const seconds = ({ user, system }: NodeJS.CpuUsage) => (user + system) / 1e6;
  const node = process.cpuUsage();
  const main = process.threadCpuUsage();
  const receiver = await receiverCpu();
  const pg = postgresCpu(database);
  return async () => {
    const mainCpu = seconds(process.threadCpuUsage(main));
    const receiverCpuUsed = (await receiverCpu()) - receiver;
    const db = postgresCpuSince(pg, postgresCpu(database));
    return {
      main: mainCpu,
      receiver: receiverCpuUsed,
      other: seconds(process.cpuUsage(node)) - mainCpu - receiverCpuUsed,
      db,
    };
  };
}

const cpuLine = (c: Awaited<ReturnType<Awaited<ReturnType<typeof cpuMeter>>>>) =>
  `CPU s: main thread ${c.main.toFixed(2)}, receiver ${c.receiver.toFixed(2)}, other Node threads ${c.other.toFixed(2)}, PostgreSQL ${c.db.toFixed(2)}, total ${(c.main + c.receiver + c.other + c.db).toFixed(2)}`;

async function seed(services: any, orgId: string, emails: number) {
  const meta = { orgId, mode: 'live' as const, actor: 'system' };
  const at = new Date().toISOString();
  for (let i = 0; i < emails; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, emails - i) }, async () => {
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
          emailStream(emailId),
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

/** A delivery as the baseline sends it: its body and the very headers Postline sent with it. */
interface RawRequest {
  body: string;
  headers: Record<string, string>;
}

async function baseline(url: string, requests: RawRequest[]): Promise<number> {
  const agent = new Agent({ connections: CONCURRENCY });
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < requests.length) {
        const { body, headers } = requests[next++];
        const res = await request(url, { method: 'POST', headers, body, dispatcher: agent });
        await res.body.dump();
        if (res.statusCode !== 204) throw new Error(`baseline got ${res.statusCode}`);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await agent.close();
  return requests.length / seconds;
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
    const dispatcher = new WebhookDispatcher(services, {
      concurrency: CONCURRENCY,
      perEndpoint: CONCURRENCY,
    });
    const database = new URL(url).pathname.slice(1);
    const receiverCpu = () => receiver.ask('cpu') as Promise<number>;
    const checkpoint = async () =>
      (
        await db.query<{ position: string }>('SELECT position FROM process_checkpoints WHERE name = $1', [
          FAN_OUT_NAME,
        ])
      ).rows[0]?.position ?? '';
    const pending = async () =>
      (
        await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'pending'`,
        )
      ).rows[0].n;
    // The round's requests as Postline sent them, headers signed beforehand: the baseline puts the same bytes
    // on the wire (the receiver parses the same headers), and only Postline's signing is timed.
    const requestsSince = async (after: string): Promise<RawRequest[]> => {
      const { rows } = await db.query<{ id: string; body: string; at: string }>(
        `SELECT id, body, floor(extract(epoch FROM completed_at))::text AS at FROM webhook_deliveries
         WHERE id > $1 ORDER BY id`,
        [after],
      );
      return rows.map(({ id, body, at }) => ({
        body,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Postline-Webhooks/1',
          'webhook-id': id,
          'webhook-timestamp': at,
          'webhook-signature': signatureHeader([secret], id, Number(at), body),
        },
      }));
    };
    const lastId = async () =>
      (await db.query<{ id: string }>(`SELECT max(id) AS id FROM webhook_deliveries`)).rows[0].id ?? '';

    /** BENCH_TRACE: requests received over time, to see where the pipeline stalls. */
    const traceReceiver = (started: number, to: Receiver) => {
      const points: string[] = [];
      let on = true;
      let last = machineCpu();
      void (async () => {
        while (on) {
          await new Promise((r) => setTimeout(r, 25));
          const now = machineCpu();
          const busy = (100 * (now.busy - last.busy)) / (now.total - last.total || 1);
          last = now;
          points.push(`${(performance.now() - started).toFixed(0)}ms:${to.count()}(${busy.toFixed(0)}%)`);
        }
      })();
      return {
        mark: (what: string) => points.push(`[${what} ${(performance.now() - started).toFixed(0)}ms]`),
        stop: () => {
          on = false;
          console.log(`\ntrace: ${points.join(' ')}`);
        },
      };
    };

    /**
     * Fans out what the log holds from the fan-out's checkpoint and waits until it is delivered. The end is found
     * without loading the database during the round: the receiver has had every request (it tells), then, polled
     * every millisecond, the checkpoint reaches the log's head and no delivery is pending.
     */
    const round = async (deliveries: number, to: Receiver = receiver) => {
      const head = await services.store.headPosition();
      await to.ask('reset');
      const received = to.ask(deliveries);
      const fanOut = new WebhookFanOut(services);
      const started = performance.now();
      fanOut.start();
      const trace = process.env.BENCH_TRACE ? traceReceiver(started, to) : null;
      await received;
      trace?.mark('every request received');
      while ((await checkpoint()) < head) await new Promise((r) => setTimeout(r, 1));
      while ((await pending()) > 0) await new Promise((r) => setTimeout(r, 1));
      const seconds = (performance.now() - started) / 1000;
      trace?.stop();
      await fanOut.stop();
      return { seconds };
    };

    // Realistic receivers: 100 endpoints answering after 20 to 80 ms, the dispatcher as the service runs it.
    const slowScenario = async () => {
      const slow = await startReceiver(100, [20, 80]);
      try {
        const orgs: string[] = [];
        for (const port of slow.ports) {
          const o = await createOrganization(services, { name: `Bench ${port}`, plan: 'business' });
          await createWebhook(services, { orgId: o.orgId, mode: 'live', actor: 'cli' }, 'business', 0, {
            url: `http://127.0.0.1:${port}/hooks`,
            events: ['email.*'],
            active: true,
          });
          orgs.push(o.orgId);
        }
        const serviceDispatcher = new WebhookDispatcher(services);
        serviceDispatcher.start();
        const bound = CONCURRENCY_OF_SERVICE / 0.05;
        const rates: number[] = [];
        const perOrg = Math.ceil(SLOW_EMAILS / orgs.length);
        for (let r = 0; r <= SLOW_ROUNDS; r++) {
          process.stdout.write(
            r === 0
              ? 'realistic receivers, warm-up round... '
              : `realistic receivers, round ${r} of ${SLOW_ROUNDS}... `,
          );
          for (const orgId of orgs) await seed(services, orgId, perOrg);
          const expected = 2 * perOrg * orgs.length + (r === 0 ? orgs.length : 0); // and the test events
          await compiled();
          const cpuSince = await cpuMeter(database, () => slow.ask('cpu') as Promise<number>);
          const { seconds } = await round(expected, slow);
          const cpuUsed = await cpuSince();
          const { rows } = await db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM webhook_deliveries WHERE status <> 'succeeded'`,
          );
          if (rows[0].n > 0) throw new Error(`${rows[0].n} deliveries did not succeed`);
          const rate = expected / seconds;
          console.log(
            `${expected} deliveries in ${seconds.toFixed(2)} s: ${rate.toFixed(0)}/s, ${((100 * rate) / bound).toFixed(0)} % of the bound (${bound.toFixed(0)}/s); ${cpuLine(cpuUsed)}`,
          );
          if (r > 0) rates.push(rate);
        }
        await serviceDispatcher.stop();
        const median = [...rates].sort((a, b) => a - b)[(rates.length - 1) >> 1];
        console.log(
          `\nrealistic receivers (100 endpoints, 20-80 ms, ${CONCURRENCY_OF_SERVICE} in flight): median ${median.toFixed(0)} deliveries/s, ${((100 * median) / bound).toFixed(0)} % of the concurrency bound (${bound.toFixed(0)}/s)`,
        );
      } finally {
        slow.close();
      }
    };

    if (SCENARIOS.includes('fast')) {
      // Postline's warm-up: rounds as large as the measured one run every code path first (JIT), each after a
      // seeding as the measured round is: with one, V8 was still optimizing code again in the measured round (code
      // the seeding had made polymorphic), about 0.2 s of CPU in its compiler threads. The dispatcher then stays up,
      // idle, as in a service.
      process.stdout.write(`warming up with ${WARM_UP_ROUNDS} x ${WARM_UP} emails... `);
      dispatcher.start();
      for (let i = 0; i < WARM_UP_ROUNDS; i++) {
        await seed(services, org.orgId, WARM_UP);
        await round(2 * WARM_UP + (i === 0 ? 1 : 0)); // and the test event sent on creation
      }
      console.log('done');

      // Measured rounds: Postline and the raw POSTs of that round's requests take turns, so that neither gains
      // from a quiet moment of the shared machine.
      type Cpu = Awaited<ReturnType<Awaited<ReturnType<typeof cpuMeter>>>>;
      const rounds: {
        postline: number;
        postlineSeconds: number;
        postlineCpu: Cpu;
        raw: number;
        rawCpu: Cpu;
      }[] = [];
      const expected = DELIVERIES;
      let verified = 0;
      for (let r = 0; r < ROUNDS; r++) {
        process.stdout.write(
          `round ${r + 1} of ${ROUNDS}: seeding ${EMAILS} emails (${EMAILS * 3} events)... `,
        );
        const before = await lastId();
        await seed(services, org.orgId, EMAILS);
        await compiled();
        const cpuSince = await cpuMeter(database, receiverCpu);
        const { seconds } = await round(expected);
        const postlineCpu = await cpuSince();
        const { rows: outcome } = await db.query<{ total: number; done: number }>(
          `SELECT count(*)::int AS total, count(*) FILTER (WHERE status = 'succeeded')::int AS done
         FROM webhook_deliveries WHERE id > $1`,
          [before],
        );
        if (outcome[0].total !== expected || outcome[0].done !== expected)
          throw new Error(
            `${outcome[0].done} of ${outcome[0].total} deliveries succeeded, ${expected} expected`,
          );
        const { samples, count } = await receiver.ask('stats');
        if (count < expected) throw new Error(`receiver saw ${count} of ${expected}`);
        for (const s of samples) new Webhook(secret).verify(s.body, s.headers); // throws unless signed right
        verified += samples.length;

        const requests = await requestsSince(before);
        await receiver.ask('reset');
        if (r === 0) {
          // The baseline's warm-up: its code runs in the main thread, which has sent nothing so far; on a busy
          // machine it takes several runs (and some idle time) to be compiled, and until then it speeds up.
          for (let i = 0; i < RAW_WARM_UP_RUNS; i++) await baseline(hookUrl, requests);
        }
        await compiled(); // as before Postline's: the machine settles after the other side's work
        const rawCpuSince = await cpuMeter(database, receiverCpu);
        // Twice over, so that its run lasts about as long as Postline's: a run of a fraction of a second after the
        // pause is slower than a longer one (the machine picks up speed), which would favour the longer side.
        const raw = await baseline(hookUrl, [...requests, ...requests]);
        const rawCpu = await rawCpuSince();
        rounds.push({ postline: expected / seconds, postlineSeconds: seconds, postlineCpu, raw, rawCpu });
        console.log(`${((100 * expected) / seconds / raw).toFixed(0)} %`);
      }
      await dispatcher.stop();
      // The rounds' ratios are paired measurements: their median is the figure, robust to one round's hiccup on
      // either side (best-of-N on each side would compare two different moments of the machine).
      const ratio = (x: (typeof rounds)[number]) => x.postline / x.raw;
      const byRatio = [...rounds].sort((a, b) => ratio(a) - ratio(b));
      const mid = byRatio[(byRatio.length - 1) >> 1];

      const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
      console.log(
        `\n${os.cpus().length} x ${cpu}, Node ${process.version}, PostgreSQL (local), concurrency ${CONCURRENCY}`,
      );
      console.log(
        `| measurement (the median of ${ROUNDS} alternating rounds) | deliveries | per second | vs. raw |`,
      );
      console.log(`|---|---:|---:|---:|`);
      console.log(
        `| Postline fan-out + signed dispatch (log -> receiver, all recorded) | ${expected} | ${mid.postline.toFixed(0)} | ${(100 * ratio(mid)).toFixed(0)} % |`,
      );
      console.log(
        `| raw undici request POSTs, the same requests (twice) | ${2 * expected} | ${mid.raw.toFixed(0)} | 100 % |`,
      );
      console.log(
        `\nrounds (Postline/raw per second): ${rounds.map((x) => `${x.postline.toFixed(0)}/${x.raw.toFixed(0)} = ${(100 * ratio(x)).toFixed(0)} %`).join(', ')}`,
      );
      console.log(
        `Postline (median round): ${mid.postlineSeconds.toFixed(2)} s; ${cpuLine(mid.postlineCpu)}`,
      );
      console.log(
        `raw (median round, the requests twice): ${((2 * expected) / mid.raw).toFixed(2)} s; ${cpuLine(mid.rawCpu)}`,
      );
      console.log(`signatures verified with standardwebhooks: ${verified} sampled deliveries`);
    }
    if (SCENARIOS.includes('slow')) await slowScenario();
  } finally {
    await postline.close();
    await db.close();
    receiver.close();
    await drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
