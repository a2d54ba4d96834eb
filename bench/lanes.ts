/**
 * The `lanes` part of `npm run bench:send`: transactional email while another organization's broadcast backlog is
 * queued to a slow destination. See bench/README.md.
 *
 * Postline runs as a service does (every process manager in the background). Organization A imports BENCH_BACKLOG
 * contacts (default 20,000) at bench.example.org, whose MX (mx.slow.test, 127.0.0.2) answers each message after
 * SLOW_MS (BENCH_SLOW_MS, default 200), and sends them a live broadcast. While that backlog is queued, BENCH_LANE_SENDS transactional emails from
 * organization B and as many from A itself go to rcpt.test (a sink answering at once), spread over SPREAD_MS: each
 * is timed from its `POST /v1/emails` answer to its `EmailDelivered` (the event's commit time in the log). The same
 * sends on an idle queue, in the same run before the broadcast, are the raw baseline; they are also timed while the
 * broadcast expands.
 */
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { startPostline } from '../bin/service.ts';
import { emailStream } from '../domain/emails/email.events.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { startDnsServer } from '../test/support/dns-server.ts';
import { publishDomainRecords, recipientDomainOnLoopback } from '../test/support/domains.ts';
import { startSmtpSink } from '../test/support/smtp-sink.ts';
import {
  readContactImport,
  startContactImport,
} from '../write-side/contact-imports/contact-import.commands.ts';
import { createOrganization } from '../write-side/organizations/organization.commands.ts';
import { benchDatabase } from './bench-database.ts';

const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 20_000);
const SENDS = Number(process.env.BENCH_LANE_SENDS ?? 50);
/** Organizations with such a broadcast queued: A and BENCH_BROADCASTERS - 1 others (default none). */
const BROADCASTERS = Number(process.env.BENCH_BROADCASTERS ?? 1);
/** How long the slow destination takes to answer each message's data (BENCH_SLOW_MS). */
const SLOW_MS = Number(process.env.BENCH_SLOW_MS ?? 200);
/** The sends of one measurement are spread evenly over this time. */
const SPREAD_MS = 5_000;
/** The recipients of the broadcasts: their MX is the slow destination. */
const SLOW_DOMAIN = 'bench.example.org';
const IMPRESSUM = { company_name: 'Acme', address: 'Street 1', country: 'DE', email: 'legal@acme.example' };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const figures = (ms: number[]) => {
  const s = [...ms].sort((a, b) => a - b);
  const f = (v: number) => (v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${Math.round(v)} ms`);
  return `p50 ${f(percentile(s, 50))}, p95 ${f(percentile(s, 95))}, p99 ${f(percentile(s, 99))}, max ${f(s.at(-1)!)}`;
};

/** Returns the lines for the report. */
export async function measureLanes(o: { redisUrl: string }): Promise<string[]> {
  const { env, dispose } = await benchDatabase('lanes');
  const dns = await startDnsServer();
  const fast = await startSmtpSink();
  const slow = await startSmtpSink({ host: '127.0.0.2', port: fast.port, dataDelayMs: SLOW_MS });
  recipientDomainOnLoopback(dns);
  dns.set(SLOW_DOMAIN, 'MX', [{ exchange: 'mx.slow.test', priority: 10 }]);
  dns.set('mx.slow.test', 'A', ['127.0.0.2']);
  const config = loadConfig({
    ...env,
    DNS_SERVERS: dns.serverAddress,
    OUTBOUND_SMTP_PORT: String(fast.port),
    POSTLINE_MX_HOST: 'mx.postline.test',
    POSTLINE_SPF_INCLUDE: 'spf.postline.test',
    POSTLINE_TRACKING_HOST: 'track.postline.test',
    PROJECTION_WAIT_MS: '600000',
    REDIS_URL: o.redisUrl,
  });
  const postline = await startPostline(config, { smtp: false, log: createLogger('warn') });
  const { services } = postline;
  const api = `http://127.0.0.1:${postline.port}/v1`;
  const call = async (key: string, method: string, path: string, body?: unknown) => {
    const r = await request(`${api}${path}`, {
      method: method as 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await r.body.json()) as any;
    if (r.statusCode >= 300) throw new Error(`${method} ${path}: ${r.statusCode} ${JSON.stringify(json)}`);
    return json;
  };
  const count = async (sql: string) => (await services.db.query<{ n: number }>(sql)).rows[0].n;
  const backlog = () => count(`SELECT count(*)::int AS n FROM delivery_jobs WHERE lane = 'broadcast'`);
  try {
    const orgWithDomain = async (name: string) => {
      const org = await createOrganization(services, { name, plan: 'business' });
      await services.readYourWrites.waitFor(['api_keys'], org.position);
      const domain = await call(org.liveKey, 'POST', '/domains', {
        name: `${name.toLowerCase()}-bench.test`,
      });
      publishDomainRecords(dns, domain);
      if ((await call(org.liveKey, 'POST', `/domains/${domain.id}/verify`, {})).status !== 'verified')
        throw new Error('domain not verified');
      await call(org.liveKey, 'PATCH', `/domains/${domain.id}`, { impressum: IMPRESSUM });
      return { ...org, from: `${name} <hello@${domain.name}>` };
    };
    const a = await orgWithDomain('Acme');
    const b = await orgWithDomain('Other');

    /** SENDS from each organization, alternating, spread over SPREAD_MS: ms from each answer to its delivery. */
    const measure = async () => {
      const sent: { org: 'a' | 'b'; id: string; answeredAt: number; postMs: number }[] = [];
      const started = performance.now();
      const posts: Promise<void>[] = [];
      for (let i = 0; i < 2 * SENDS; i++) {
        await sleep(Math.max(0, started + (i * SPREAD_MS) / (2 * SENDS) - performance.now()));
        const org = i % 2 === 0 ? b : a;
        const before = performance.now();
        posts.push(
          call(org.liveKey, 'POST', '/emails', {
            from: org.from,
            to: [`code${i}@rcpt.test`],
            subject: 'Your sign-in code',
            text: 'Your code is 123456.',
          }).then((r) => {
            sent.push({
              org: org === a ? 'a' : 'b',
              id: r.id,
              answeredAt: Date.now(),
              postMs: performance.now() - before,
            });
          }),
        );
      }
      await Promise.all(posts);
      const deliveredAt = new Map<string, number>();
      for (;;) {
        const { rows } = await services.db.query<{ stream_id: string; at: Date }>(
          `SELECT stream_id, min(created_at) AS at FROM events
           WHERE type = 'EmailDelivered' AND stream_id = ANY($1) GROUP BY stream_id`,
          [sent.map((s) => emailStream(s.id))],
        );
        for (const r of rows) deliveredAt.set(r.stream_id, r.at.getTime());
        if (deliveredAt.size === sent.length) break;
        await sleep(100);
      }
      const latency = (org?: 'a' | 'b') =>
        sent
          .filter((s) => !org || s.org === org)
          .map((s) => deliveredAt.get(emailStream(s.id))! - s.answeredAt);
      return {
        text: `B's ${SENDS}: ${figures(latency('b'))}; A's own ${SENDS}: ${figures(latency('a'))}; all: ${figures(latency())}; POST ${figures(sent.map((s) => s.postMs))}`,
        p99: percentile(
          latency().sort((x, y) => x - y),
          99,
        ),
      };
    };

    await measure(); // warm-up (JIT, connections, caches)
    const idle = await measure();

    /** A live broadcast of `org` to BACKLOG contacts at the slow destination, created (not sent yet). */
    const broadcastOf = async (org: typeof a) => {
      const audience = await call(org.liveKey, 'POST', '/audiences', { name: 'Everyone' });
      // Imported by the service's own contact-import process.
      const csv = Buffer.from(
        [
          'email,first_name',
          ...Array.from({ length: BACKLOG }, (_, i) => `person${i}@${SLOW_DOMAIN},First${i}`),
        ].join('\n'),
      );
      const { importId } = await startContactImport(
        services,
        { orgId: org.orgId, mode: 'live', actor: 'bench' },
        { audienceId: audience.id, file: Readable.from([csv]), maxBytes: csv.length },
      );
      for (;;) {
        const state = await readContactImport(services, importId);
        if (state.exists && state.status === 'completed') break;
        if (state.exists && state.status === 'failed')
          throw new Error(`import failed: ${JSON.stringify(state)}`);
        await sleep(200);
      }
      await services.readYourWrites.waitFor(
        ['contacts'],
        await services.store.headPosition({ committed: true }),
      );
      return (
        await call(org.liveKey, 'POST', '/broadcasts', {
          name: 'News',
          audience_id: audience.id,
          from: org.from,
          subject: 'News for {{contact.first_name}}',
          text: 'Hello {{contact.first_name}}, here is what is new this month.',
        })
      ).id as string;
    };
    const sent = async (org: typeof a, id: string) => {
      while ((await call(org.liveKey, 'GET', `/broadcasts/${id}`)).status !== 'sent') await sleep(200);
    };
    // Other organizations' broadcasts to the same destination first (BENCH_BROADCASTERS beside A).
    for (let i = 1; i < BROADCASTERS; i++) {
      const org = await orgWithDomain(`Bulk${i}`);
      const id = await broadcastOf(org);
      await call(org.liveKey, 'POST', `/broadcasts/${id}/send`, {});
      await sent(org, id);
    }
    // The backlog: A's live broadcast to BACKLOG contacts at the slow destination.
    const broadcast = { id: await broadcastOf(a) };
    const t0 = performance.now();
    await call(a.liveKey, 'POST', `/broadcasts/${broadcast.id}/send`, {});
    const expanded = sent(a, broadcast.id).then(() => (performance.now() - t0) / 1000);
    // The same sends while the broadcast expands: their events come after its emails' in the log.
    const expanding = await measure();
    const expandedS = await expanded;
    // Every email of it a job (the delivery's consumer caught up), and the read models caught up.
    while ((await backlog()) + slow.messages.length < BROADCASTERS * BACKLOG) await sleep(200);
    await services.readYourWrites.waitFor(['emails'], await services.store.headPosition({ committed: true }));
    const queuedBefore = await backlog();
    const slowBefore = slow.messages.length;
    const busy = await measure();
    const queuedAfter = await backlog();
    return [
      `Lanes: transactional sends, POST /v1/emails answered -> EmailDelivered, ${SENDS} from organization B and ${SENDS} from A spread over ${SPREAD_MS / 1000} s`,
      `  idle queue (baseline): ${idle.text}`,
      `  while A's broadcast expands (sent in ${expandedS.toFixed(1)} s from its send): ${expanding.text}`,
      `  while A's broadcast backlog waits (${queuedBefore} of ${BROADCASTERS * BACKLOG}${BROADCASTERS > 1 ? `, ${BROADCASTERS} organizations'` : ''} queued at the start, ${queuedAfter} at the end; the slow destination answers each message after ${SLOW_MS} ms and took ${slow.messages.length - slowBefore} meanwhile): ${busy.text}`,
      `  p99 ${(busy.p99 / 1000).toFixed(2)} s against ${(idle.p99 / 1000).toFixed(2)} s idle (aim: below 5 s)`,
    ];
  } finally {
    await postline.close();
    await slow.close();
    await fast.close();
    await dns.close();
    await dispose();
  }
}
