/**
 * `npm run bench:broadcast`: a broadcast to a large audience, against what the API does for the same emails. See
 * bench/README.md.
 *
 * - Import: BENCH_CONTACTS contacts from one CSV file through the contact-import process, beside a raw multi-row
 *   INSERT of the same rows, then the same addresses again, every contact updated (bench/contacts-import.ts); they
 *   are the audience of what follows.
 * - Expansion: a test-mode broadcast to an audience of BENCH_CONTACTS contacts, sent, then expanded by the broadcast
 *   process, running as a service's does, until `BroadcastSent`: emails/s into the log; twice, and between the two
 *   the batch API (`POST /v1/emails/batch`, 100 emails a request, 20 connections) for BENCH_SECONDS: accepted
 *   emails/s. Both with the broadcast process caught up first, then following the log.
 * - The API meanwhile: `POST /v1/emails` latency at 5 connections, alone and while a third broadcast expands.
 *
 * - Round trips per contact imported, per contact updated by importing the same addresses again, and per email
 *   expanded (bench/round-trips.ts): a counting run of BENCH_COUNT_CONTACTS (default 5,000; 0 skips it) on a
 *   private PostgreSQL, before the timed run.
 *
 * Settings: BENCH_CONTACTS (default 100,000), BENCH_SECONDS (default 10), BENCH_COUNT_CONTACTS, BENCH_PARTS
 * (default `import,expansion`; `import` alone stops after the import), TEST_DATABASE_ADMIN_URL (as the tests).
 */
import { request } from 'undici';
import { startPostline } from '../bin/service.ts';
import { broadcastStream } from '../domain/broadcasts/broadcast.events.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { registry } from '../platform/metrics.ts';
import { BroadcastExpansionProcess } from '../processes/broadcasts/broadcast-expansion.process.ts';
import { readBroadcast } from '../write-side/broadcasts/broadcast.commands.ts';
import { createOrganization } from '../write-side/organizations/organization.commands.ts';
import { benchDatabase } from './bench-database.ts';
import { importContacts, measureContactImport } from './contacts-import.ts';
import { cpuMeter, cpuText } from './cpu.ts';
import { machineLine } from './machine.ts';
import { startRoundTrips } from './round-trips.ts';
import { emailsWrittenAhead } from './writes-ahead.ts';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 100_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const COUNT_CONTACTS = Number(process.env.BENCH_COUNT_CONTACTS ?? 5_000);
const BATCH_CONNECTIONS = 20;
const PARTS = new Set((process.env.BENCH_PARTS ?? 'import,expansion').split(','));

/** A run of autocannon: awaited for its results, or stopped early. */
const autocannon = (await import('autocannon' as string)).default as (
  o: Record<string, unknown>,
) => Promise<any> & { stop(): void };
const rate = (n: number, ms: number) => Math.round((n / ms) * 1000);
const content = (audienceId: string) => ({
  name: 'Bench',
  audience_id: audienceId,
  from: 'Acme <news@acme-bench.test>',
  subject: 'News for {{contact.first_name}}',
  html: '<p>Hello {{contact.first_name}}, here is what is new this month.</p>',
  text: 'Hello {{contact.first_name}}, here is what is new this month.',
});

/**
 * A request of the batch API: `n` of the broadcast's emails as a user of the API would send them, each to an
 * address of its own, rendered, with an unsubscribe link in html and text and the List-Unsubscribe headers that
 * bulk mail must carry (the broadcast adds the same).
 */
const batchOf = (n: number) =>
  Array.from({ length: n }, (_, i) => {
    const unsubscribe = `https://acme-bench.test/unsubscribe/reader${i}-${'x'.repeat(40)}`;
    return {
      from: 'Acme <news@acme-bench.test>',
      to: [`"Reader${i} Last, ${i}" <reader${i}@example.org>`],
      subject: `News for Reader${i}`,
      html: `<p>Hello Reader${i}, here is what is new this month.</p><div style="margin-top:32px;font-size:12px;color:#666"><a href="${unsubscribe}">Unsubscribe</a></div>`,
      text: `Hello Reader${i}, here is what is new this month.\n\n-- \nUnsubscribe: ${unsubscribe}\n`,
      headers: {
        'List-Unsubscribe': `<${unsubscribe}>, <mailto:unsubscribe+reader${i}@acme-bench.test>`,
        'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      },
    };
  });

type Postline = Awaited<ReturnType<typeof startPostline>>;

/** An organization on `postline` with an audience, its API, and a broadcast's expansion run to its end. */
async function session(postline: Postline) {
  const org = await createOrganization(postline.services, { name: 'Bench', plan: 'business' });
  await postline.services.readYourWrites.waitFor(['api_keys'], org.position);
  const api = `http://127.0.0.1:${postline.port}/v1`;
  const call = async (method: string, path: string, body?: unknown) => {
    const r = await request(`${api}${path}`, {
      method: method as 'POST',
      headers: { authorization: `Bearer ${org.testKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await r.body.json()) as any;
    if (r.statusCode >= 300) throw new Error(`${method} ${path}: ${r.statusCode} ${JSON.stringify(json)}`);
    return json;
  };
  const audience = await call('POST', '/audiences', { name: 'Everyone' });
  const expansion = new BroadcastExpansionProcess(postline.services);
  /**
   * Sends a new broadcast to the audience and has the process expand it, following the log as a running service's
   * does, until it is sent; emails queued and ms taken. The process has read the log up to then first, so the time
   * is the expansion's and not a catch-up over the import's events; `measure` starts measuring then. (Run by
   * `runOnce` in a loop instead, each 5 s claim would end with a catch-up over the claim's own emails before the
   * next: a tenth of the time, which a live process spends reading the log beside the expansion.)
   */
  const expand = async (measure: () => unknown = () => {}) => {
    const broadcast = await call('POST', '/broadcasts', content(audience.id));
    const started = await following(async () => {
      await measure();
      const started = performance.now();
      await call('POST', `/broadcasts/${broadcast.id}/send`, {});
      for (;;) {
        const { state } = await readBroadcast(postline.services, broadcast.id);
        if (state.exists && state.status === 'sent') return started;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    });
    const ms = performance.now() - started;
    const history = await postline.services.store.readStream(broadcastStream(broadcast.id));
    const queued = history.reduce(
      (n, e) => n + (e.type === 'BroadcastBatchExpanded' ? (e.data as { queued: number }).queued : 0),
      0,
    );
    return { queued, ms };
  };
  /**
   * Runs `work` (an expansion, or the batch API's requests) with the broadcast process following the log, caught up
   * first: a running service's process managers read every email's events; both sides pay it.
   */
  const following = async <T>(work: () => Promise<T>): Promise<T> => {
    await expansion.runOnce();
    expansion.start();
    try {
      return await work();
    } finally {
      await expansion.stop();
    }
  };
  return { org, api, call, audience, expand, following, tenant: { orgId: org.orgId, mode: 'test' as const } };
}

/** Round trips per contact imported and per email expanded, on a service of its own (bench/round-trips.ts). */
async function countRoundTrips(env: Record<string, string>): Promise<string[]> {
  const counter = await startRoundTrips();
  const postline = await startPostline(loadConfig({ ...env, DATABASE_URL: counter.url }), {
    processes: false,
    smtp: false,
    log: createLogger('warn'),
  });
  try {
    const s = await session(postline);
    const metrics = () => registry.metrics();
    /** The import's round trips until its contacts are readable; `renewed`: the same addresses again, updated. */
    const countImport = async (renewed: boolean) => {
      const importing = await counter.begin(metrics);
      await importContacts(postline.services, s.tenant, s.audience.id, COUNT_CONTACTS, renewed);
      await postline.services.readYourWrites.waitFor(
        ['contacts'],
        await postline.services.store.headPosition(),
      );
      return importing.end(COUNT_CONTACTS);
    };
    const imported = await countImport(false);
    const reimported = await countImport(true);
    let expanding: Awaited<ReturnType<typeof counter.begin>> | undefined;
    const { queued } = await s.expand(async () => {
      expanding = await counter.begin(metrics);
    });
    await postline.services.readYourWrites.waitFor(['emails'], await postline.services.store.headPosition());
    const expanded = await expanding!.end(queued);
    const batched = await s.following(async () => {
      const batching = await counter.begin(metrics);
      for (let sent = 0; sent < COUNT_CONTACTS; sent += 100)
        await s.call('POST', '/emails/batch', batchOf(100));
      await postline.services.readYourWrites.waitFor(
        ['emails'],
        await postline.services.store.headPosition(),
      );
      return batching.end(COUNT_CONTACTS);
    });
    return [
      `import: ${imported[0]}`,
      ...imported.slice(1),
      `re-import, every contact updated: ${reimported[0]}`,
      ...reimported.slice(1),
      `expansion: ${expanded[0]}`,
      ...expanded.slice(1),
      `batch API: ${batched[0]}`,
      ...batched.slice(1),
    ];
  } finally {
    await postline.close();
    await counter.stop();
  }
}

const { url, env, dispose } = await benchDatabase('broadcast');
const results: string[] = [];
if (COUNT_CONTACTS > 0) results.push(...(await countRoundTrips(env)));
const config = loadConfig({
  ...env,
  // Waits for the read models after 100,000 contacts: longer than a request's.
  PROJECTION_WAIT_MS: '600000',
  ...(process.env.BROADCAST_EXPANSION_BATCH && {
    BROADCAST_EXPANSION_BATCH: process.env.BROADCAST_EXPANSION_BATCH,
  }),
});
const postline = await startPostline(config, { processes: false, smtp: false, log: createLogger('warn') });
const meter = cpuMeter(url);
try {
  const { org, api, audience, expand, following } = await session(postline);

  /** Once the emails read model has taken in everything in the log so far. */
  const caughtUp = async () =>
    postline.services.readYourWrites.waitFor(['emails'], await postline.services.store.headPosition());

  const imported = await measureContactImport(
    postline.services,
    { orgId: org.orgId, mode: 'test' },
    audience.id,
    CONTACTS,
    meter,
  );
  results.push(...imported.text);
  if (PARTS.has('expansion')) {
    /** A broadcast to the whole audience expanded by the process: emails queued, ms, CPU per email. */
    const measuredExpansion = async () => {
      let before = meter.sample();
      const { queued, ms } = await expand(() => {
        before = meter.sample();
      });
      return { queued, ms, cpu: meter.per(before, meter.sample(), queued) };
    };
    /** The batch API on the same service, same database, for SECONDS: emails/s and CPU per email. */
    const measuredBatches = async () => {
      const batch = JSON.stringify(batchOf(100));
      await caughtUp(); // as for the sends alone below: the broadcast's emails are not in its way
      return following(async () => {
        const before = meter.sample();
        const r = await autocannon({
          url: `${api}/emails/batch`,
          method: 'POST',
          connections: BATCH_CONNECTIONS,
          duration: SECONDS,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${org.testKey}` },
          body: batch,
        });
        const emails = r['2xx'] * 100;
        const cpu = meter.per(before, meter.sample(), Math.max(1, emails));
        return { rate: Math.round(emails / SECONDS), errors: r.non2xx + r.errors, cpu };
      });
    };
    // Expansion, batch API, expansion again: the machine's drift over the run (these VMs speed up and slow
    // down by half) weighs on both sides alike, and the tables grow under both.
    const expansions = [await measuredExpansion()];
    const batches = await measuredBatches();
    expansions.push(await measuredExpansion());
    for (const [i, e] of expansions.entries())
      results.push(
        `expansion ${i + 1}: ${e.queued} emails in ${(e.ms / 1000).toFixed(1)} s, ${rate(e.queued, e.ms)} emails/s into the log (${cpuText(e.cpu)} per email)`,
      );
    results.push(
      `batch API, between them: ${batches.rate} emails/s (${BATCH_CONNECTIONS} connections, ${batches.errors} errors; ${cpuText(batches.cpu)} per email)`,
    );
    const expansionRate =
      (rate(expansions[0].queued, expansions[0].ms) + rate(expansions[1].queued, expansions[1].ms)) / 2;
    results.push(
      `expansion (mean of the two) / batch API: ${Math.round((expansionRate / batches.rate) * 100)}% (aim: at least 100%)`,
    );

    // Single sends (5 connections) alone, then while another broadcast to the same audience expands.
    const single = {
      url: `${api}/emails`,
      method: 'POST',
      connections: 5,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${org.testKey}` },
      body: JSON.stringify({
        from: 'news@acme-bench.test',
        to: 'ann@example.org',
        subject: 'Hi',
        text: 'Hi',
      }),
    };
    // Alone: once the read models have taken in the broadcasts' emails, which a send waits for otherwise.
    await caughtUp();
    const quiet = await autocannon({ ...single, duration: 3 });
    const ahead = await emailsWrittenAhead();
    const sends = autocannon({ ...single, duration: 600 });
    const beside = await expand();
    sends.stop();
    const busy = await sends;
    results.push(
      `POST /v1/emails (5 connections): p50/p99 ${quiet.latency.p50}/${quiet.latency.p99} ms alone, ` +
        `${busy.latency.p50}/${busy.latency.p99} ms while a broadcast expands (${rate(beside.queued, beside.ms)} emails/s then; ${busy.non2xx + busy.errors} errors; ` +
        `${(await emailsWrittenAhead()) - ahead} of ${busy.requests.total} sends wrote their row ahead of the read model)`,
    );
  }
} finally {
  await postline.close();
  await dispose();
}
console.log(
  `\nbench:broadcast (${CONTACTS} contacts)\n  ${await machineLine()}\n${results.map((l) => `  ${l}`).join('\n')}`,
);
