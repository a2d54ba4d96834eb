import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_URL } from '../support/databases.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { addVerifiedDomain, sendingToLoopbackEnv } from '../support/domains.ts';
import { createOrgWithCli, freePort, startServer, useServiceEnv } from '../support/process.ts';
import { deliveries, eventually, repeated, type SendLoad, sendLoad } from '../support/send-load.ts';
import { type ApiClient, apiClient } from '../support/service.ts';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts';

/**
 * The database goes away while the MTA delivers: the receiving server has answered 250, and the event that says
 * so cannot be written. `postline serve` (a child process) takes a live send load whose emails go to a real SMTP
 * server on loopback, while every backend of its database is terminated again and again, and in a second run
 * while the database refuses connections for 5 s. Each email carries `X-Test-Seq`; the receiving server must get
 * each exactly once, and every message it got must be recorded as delivered.
 */

const FROM = 'Outage <hi@outage.test>';
const EMAILS = 400;
const CONCURRENCY = 16;
const ROUNDS = 40;
/** Generous: on a loaded machine a run of 400 live emails takes well under a minute. */
const SETTLE_MS = 180_000;

const setup = useServiceEnv({
  RATE_LIMIT_RPS: '100000',
  RATE_LIMIT_BATCH_RPS: '100000',
  AUTH_FAILURES_PER_MINUTE: '100000',
});
let dns: TestDnsServer;
let sink: SmtpSink;
let server: Awaited<ReturnType<typeof startServer>>;
let api: ApiClient;
let admin: pg.Client;
let database: string;

beforeAll(async () => {
  dns = await startDnsServer();
  // The receiving server takes a moment over each message: at 5 connections it takes fewer than are sent, so
  // deliveries queue up and every connection has a message in flight when the database goes.
  sink = await startSmtpSink({ dataDelayMs: 300 });
  const env = { ...setup.env, ...sendingToLoopbackEnv(dns, sink) };
  const port = await freePort();
  server = await startServer({ ...env, PORT: String(port) });
  const org = await createOrgWithCli(env, 'Outage', 'business');
  api = apiClient(`http://127.0.0.1:${port}`, org.live_key);
  await addVerifiedDomain(api, dns, 'outage.test');
  database = new URL(setup.env.DATABASE_URL).pathname.slice(1);
  admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
}, 120_000);
afterAll(async () => {
  await admin?.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`).catch(() => {});
  await server?.stop();
  await admin?.end();
  await sink?.close();
  await dns?.close();
});

/** Terminates every backend of the service's database (the admin's connection is to another one). */
async function terminateAll(): Promise<number> {
  const { rows } = await admin.query(
    'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
    [database],
  );
  return rows[0].n;
}

/** How often the service has said so far that it could not record outcomes and keeps them to try again. */
const outcomesKept = () => server.output().split('kept, and tried again').length - 1;

const until = async (done: () => boolean) => {
  while (!done()) await new Promise((r) => setTimeout(r, 20));
};

/**
 * Once the load is done: every acknowledged email reaches the receiving server; every message it received is
 * recorded as delivered (so nothing can send it again); then no message came twice, by X-Test-Seq or Message-ID.
 */
async function expectEachDeliveredOnce(prefix: string, load: SendLoad, keptBefore: number) {
  const acknowledged = [...load.acknowledged.keys()];
  expect(acknowledged.length).toBeGreaterThan(EMAILS / 4);
  await eventually(
    () =>
      `${acknowledged.filter((s) => !deliveries(sink, prefix).some((d) => d.seq === s)).length} not delivered`,
    SETTLE_MS,
    async () => {
      const seen = new Set(deliveries(sink, prefix).map((d) => d.seq));
      return acknowledged.every((s) => seen.has(s)) || undefined;
    },
  );
  let unrecorded: string[] = [];
  await eventually(
    () => `recorded as not delivered: ${unrecorded.slice(0, 10).join(', ')} (${unrecorded.length} in all)`,
    SETTLE_MS,
    async () => {
      const ids = [...new Set(deliveries(sink, prefix).map((d) => d.emailId ?? `no id in ${d.messageId}`))];
      const statuses = await Promise.all(
        ids.map(async (id) => {
          const res = await api.get(`/v1/emails/${id}`);
          return `${id} ${res.status === 200 ? res.body.recipients[0].status : res.status}`;
        }),
      );
      unrecorded = statuses.filter((s) => !s.endsWith(' delivered'));
      return unrecorded.length === 0 || undefined;
    },
  );
  const got = deliveries(sink, prefix);
  console.log(
    `${prefix}: ${acknowledged.length} acknowledged, ${got.length} messages received; refused ${JSON.stringify(
      Object.fromEntries(load.refused),
    )}; outcomes kept to be written again: ${outcomesKept() - keptBefore}`,
  );
  expect(repeated(got.map((d) => d.seq))).toEqual({});
  expect(repeated(got.map((d) => d.messageId))).toEqual({});
  expect(server.child.exitCode, server.output()).toBeNull();
}

describe('the database goes away while the MTA delivers', () => {
  it('backends terminated again and again: every message reaches its server once and is recorded delivered', async () => {
    const kept = outcomesKept();
    const { load, done } = sendLoad(api, {
      from: FROM,
      prefix: 'term',
      count: EMAILS,
      concurrency: CONCURRENCY,
    });
    let terminated = 0;
    // Forty rounds over the load, each while the receiving server holds a 250 back: a few terminations 20 ms apart,
    // so that some catch the append of what a server answered.
    for (let round = 1; round <= ROUNDS; round++) {
      await until(() => load.answered >= (round * EMAILS) / (ROUNDS + 2) && sink.holding > 0);
      for (let i = 0; i < 5; i++) {
        terminated += await terminateAll();
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    await done;
    expect(terminated).toBeGreaterThan(0);
    await expectEachDeliveredOnce('term', load, kept);
    // The case this test is about happened: appends of what servers answered failed.
    expect(outcomesKept() - kept).toBeGreaterThan(0);
  }, 420_000);

  it('connections refused for 5 s: every message reaches its server once and is recorded delivered', async () => {
    const kept = outcomesKept();
    const { load, done } = sendLoad(api, {
      from: FROM,
      prefix: 'refuse',
      count: EMAILS,
      concurrency: CONCURRENCY,
    });
    // While the receiving server holds back its 250 to a message that has arrived whole: the answer will come
    // with the database away.
    await until(() => load.answered >= EMAILS / 3 && sink.holding > 0);
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`);
    await terminateAll();
    // The outage this test is about: five seconds without the database.
    await new Promise((r) => setTimeout(r, 5000));
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`);
    await done;
    await expectEachDeliveredOnce('refuse', load, kept);
    // The case this test is about happened: servers answered while the database was away.
    expect(outcomesKept() - kept).toBeGreaterThan(0);
  }, 420_000);
});
