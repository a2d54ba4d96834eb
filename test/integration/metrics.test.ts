import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verpAddress } from '../../domain/emails/verp.ts';
import { ManualClock } from '../../platform/clock.ts';
import { OutboundMta } from '../../processes/delivery/mta/outbound.ts';
import { SchedulerProcess } from '../../processes/scheduler/scheduler.process.ts';
import { SimulatorProcess } from '../../processes/simulator/simulator.process.ts';
import { WebhookDispatcher } from '../../processes/webhooks/dispatcher.process.ts';
import { FAN_OUT_NAME, WebhookFanOut } from '../../processes/webhooks/fan-out.process.ts';
import { type TestOrg, useTestService } from '../support/service.ts';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const TOKEN = 'metrics-token-for-tests';
const SIM = 'simulator.postline.dev';
const clock = new ManualClock('2026-06-01T10:00:00Z');

const svc = useTestService(() => ({ clock, env: { METRICS_TOKEN: TOKEN } }));
let acme: TestOrg;
let simulator: SimulatorProcess;
let fanOut: WebhookFanOut;
let dispatcher: WebhookDispatcher;
let receiver: WebhookReceiver;
let sink: SmtpSink;
let mta: OutboundMta;

beforeAll(async () => {
  acme = await svc.createOrg('pro');
  simulator = new SimulatorProcess(svc.postline.services);
  fanOut = new WebhookFanOut(svc.postline.services);
  dispatcher = new WebhookDispatcher(svc.postline.services);
  receiver = await startWebhookReceiver({ clock });
  sink = await startSmtpSink();
  mta = new OutboundMta({
    dnsServers: [],
    port: 1,
    log: pino({ level: 'silent' }),
    timeoutMs: 5_000,
    smarthostUrl: `smtp://127.0.0.1:${sink.port}`,
    tls: { rejectUnauthorized: false },
  });
});
afterAll(async () => {
  await dispatcher?.stop();
  await mta?.close();
  await sink?.close();
  await receiver?.close();
});

/** One sample of the text format: its name, labels and value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses Prometheus' text exposition format (comments skipped, label values unescaped). */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

const scrapeRaw = (authorization?: string) =>
  request(`${svc.baseUrl}/metrics`, { headers: authorization ? { authorization } : {} });

async function scrape(): Promise<Sample[]> {
  const res = await scrapeRaw(`Bearer ${TOKEN}`);
  const text = await res.body.text();
  expect(res.statusCode, text).toBe(200);
  return parse(text);
}

/** The samples named `name` whose labels include `labels`. */
const find = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
/** Their sum (0 when there is none: a counter not incremented yet has no sample). */
const sum = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  find(samples, name, labels).reduce((total, s) => total + s.value, 0);

/** How much each series named moved between two scrapes. */
const moved = (before: Sample[], after: Sample[], name: string, labels: Record<string, string> = {}) =>
  sum(after, name, labels) - sum(before, name, labels);

describe('GET /metrics', () => {
  it('needs the METRICS_TOKEN as a bearer token, and answers in the Prometheus text format', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token', `Basic ${TOKEN}`, `Bearer ${TOKEN}x`]) {
      const res = await scrapeRaw(authorization);
      expect(res.statusCode, authorization).toBe(401);
      expect(await res.body.json()).toEqual({
        error: { type: 'authentication_error', message: expect.any(String), code: 'invalid_metrics_token' },
      });
    }
    const res = await scrapeRaw(`Bearer ${TOKEN}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const samples = parse(await res.body.text());
    // prom-client's default process metrics.
    expect(find(samples, 'process_cpu_user_seconds_total')).toHaveLength(1);
    expect(find(samples, 'nodejs_heap_size_used_bytes')).toHaveLength(1);
  });

  it('serves every metric the Grafana dashboard (deploy/grafana-dashboard.json) queries', async () => {
    const text = await (await scrapeRaw(`Bearer ${TOKEN}`)).body.text();
    const served = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
    const dashboard = JSON.parse(
      readFileSync(new URL('../../deploy/grafana-dashboard.json', import.meta.url), 'utf8'),
    );
    const queried = new Set<string>();
    for (const panel of dashboard.panels)
      for (const target of panel.targets ?? [])
        for (const m of target.expr.matchAll(/\b((?:postline|process|nodejs)_\w+)\{/g))
          queried.add(m[1].replace(/_(bucket|count|sum)$/, ''));
    expect(queried.size).toBeGreaterThan(10);
    expect([...queried].filter((name) => !served.has(name))).toEqual([]);
  });

  it('counts an email accepted and what became of each recipient, by mode', async () => {
    const before = await scrape();
    const sent = await acme.test.post('/v1/emails', {
      from: 'Acme <hi@acme.test>',
      to: [`delivered@${SIM}`, `bounced@${SIM}`, `complained@${SIM}`, `delayed@${SIM}`],
      subject: 'Metrics',
      html: '<p>x</p>',
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    // The simulator sends at once; outcomes come 1 s later, the complaint a minute later, the retry 5 min later.
    await simulator.runOnce();
    for (const ms of [1000, 60_000, 5 * 60_000]) {
      clock.advance(ms);
      await simulator.runOnce();
    }
    const after = await scrape();
    const delta = (outcome: string, mode = 'test') =>
      moved(before, after, 'postline_emails_total', { outcome, mode });
    expect({
      accepted: delta('accepted'),
      delivered: delta('delivered'),
      delivery_delayed: delta('delivery_delayed'),
      bounced: delta('bounced'),
      complained: delta('complained'),
      live: moved(before, after, 'postline_emails_total', { mode: 'live' }),
    }).toEqual({ accepted: 1, delivered: 3, delivery_delayed: 1, bounced: 1, complained: 1, live: 0 });
  });

  it('labels HTTP requests with the route pattern, never the raw path, and times them', async () => {
    const sent = await acme.test.post('/v1/emails', {
      from: 'Acme <hi@acme.test>',
      to: [`delivered@${SIM}`],
      subject: 'Route',
      html: '<p>x</p>',
    });
    const before = await scrape();
    expect((await acme.test.get(`/v1/emails/${sent.body.id}`)).status).toBe(200);
    expect((await svc.client().get(`/v1/emails/${sent.body.id}`)).status).toBe(401);
    expect((await acme.test.get('/no/such/path')).status).toBe(404);
    const after = await scrape();

    const route = '/v1/emails/:email_id';
    expect(
      moved(before, after, 'postline_http_requests_total', { method: 'GET', route, status: '200' }),
    ).toBe(1);
    // Refused before routing (no valid key), still under its route.
    expect(
      moved(before, after, 'postline_http_requests_total', { method: 'GET', route, status: '401' }),
    ).toBe(1);
    expect(moved(before, after, 'postline_http_requests_total', { route: 'unmatched', status: '404' })).toBe(
      1,
    );
    expect(
      moved(before, after, 'postline_http_request_duration_seconds_count', { route, status: '200' }),
    ).toBe(1);
    expect(
      find(after, 'postline_http_request_duration_seconds_bucket', { route, status: '200', le: '+Inf' }),
    ).toHaveLength(1);
    expect(find(after, 'postline_http_requests_total', { route: '/v1/emails', method: 'POST' })).not.toEqual(
      [],
    );
    const routes = new Set(find(after, 'postline_http_requests_total').map((s) => s.labels.route));
    expect([...routes].filter((r) => r.includes(sent.body.id) || r.includes('/no/such'))).toEqual([]);
  });

  it('counts webhook requests by outcome, with their latency', async () => {
    const before = await scrape();
    const created = await acme.test.post('/v1/webhooks', { url: receiver.url, events: ['*'] });
    expect(created.status).toBe(201);
    await fanOut.runOnce();
    await dispatcher.runOnce(); // webhook.test, answered 200
    receiver.respond = () => ({ status: 500 });
    expect((await acme.test.post('/v1/webhooks', { url: receiver.url, events: ['*'] })).status).toBe(201);
    await fanOut.runOnce();
    await dispatcher.runOnce(); // the second webhook's webhook.test, answered 500
    const after = await scrape();
    expect(receiver.received).toHaveLength(2);
    expect(moved(before, after, 'postline_webhook_deliveries_total', { outcome: 'success' })).toBe(1);
    expect(moved(before, after, 'postline_webhook_deliveries_total', { outcome: 'http_error' })).toBe(1);
    expect(moved(before, after, 'postline_webhook_deliveries_total', { outcome: 'no_response' })).toBe(0);
    expect(moved(before, after, 'postline_webhook_delivery_duration_seconds_count')).toBe(2);
  });

  it('counts outbound SMTP sessions and the reply classes of the receiving server', async () => {
    sink.scriptRecipient('later@dest.test', { code: 451, message: '4.3.0 try again later' });
    sink.scriptRecipient('gone@dest.test', { code: 550, message: '5.1.1 no such user' });
    const before = await scrape();
    const outcomes = await mta.send(
      {
        messageId: '<em_metrics1@sender.test>',
        date: clock.now(),
        from: 'Acme <hello@sender.test>',
        to: ['ok@dest.test', 'later@dest.test', 'gone@dest.test'],
        cc: [],
        bcc: [],
        replyTo: [],
        subject: 'Metrics',
        text: 'Hello',
        headers: {},
        attachments: [],
        envelopeFrom: verpAddress('em_metrics1', 'bounces.sender.test'),
        dkim: null,
      },
      ['ok@dest.test', 'later@dest.test', 'gone@dest.test'],
    );
    expect(outcomes.map((o) => o.result)).toEqual(['delivered', 'deferred', 'bounced']);
    const after = await scrape();
    expect(moved(before, after, 'postline_smtp_outbound_sessions_total', { result: 'opened' })).toBe(1);
    expect(moved(before, after, 'postline_smtp_outbound_sessions_total', { result: 'failed' })).toBe(0);
    for (const cls of ['2xx', '4xx', '5xx'])
      expect(moved(before, after, 'postline_smtp_outbound_replies_total', { class: cls }), cls).toBe(1);
  });

  it('reports the lag of projections and process managers behind the log, computed when scraped', async () => {
    await fanOut.runOnce();
    const lag = async () =>
      sum(await scrape(), 'postline_consumer_lag_events', { kind: 'process', name: FAN_OUT_NAME });
    expect(await lag()).toBe(0);
    await acme.test.post('/v1/emails', {
      from: 'Acme <hi@acme.test>',
      to: [`delivered@${SIM}`],
      subject: 'Lag',
      html: '<p>x</p>',
    });
    expect(await lag()).toBeGreaterThan(0);
    await fanOut.runOnce();
    expect(await lag()).toBe(0);
    const samples = await scrape();
    for (const name of ['emails', 'api_keys'])
      expect(find(samples, 'postline_consumer_lag_events', { kind: 'projection', name }), name).toHaveLength(
        1,
      );
    expect(
      find(samples, 'postline_consumer_lag_events', { kind: 'process', name: 'simulator' }),
    ).toHaveLength(1);
  });

  it('reports queue depths, computed when scraped', async () => {
    const scheduler = new SchedulerProcess(svc.postline.services);
    await scheduler.runOnce();
    const before = await scrape();
    for (const queue of [
      'deliveries_due',
      'webhook_attempts_due',
      'scheduled_emails',
      'broadcast_expansions',
      'contact_imports',
      'suppressions_due',
    ])
      expect(find(before, 'postline_queue_depth', { queue }), queue).toHaveLength(1);
    const scheduled = await acme.test.post('/v1/emails', {
      from: 'Acme <hi@acme.test>',
      to: [`delivered@${SIM}`],
      subject: 'Later',
      html: '<p>x</p>',
      send_at: new Date(clock.now().getTime() + 3600_000).toISOString(),
    });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    await scheduler.runOnce();
    const after = await scrape();
    expect(moved(before, after, 'postline_queue_depth', { queue: 'scheduled_emails' })).toBe(1);
  });
});

describe('GET /metrics without METRICS_TOKEN', () => {
  const embedded = useTestService();

  it('is open, and computes lag and queue depths', async () => {
    const org = await embedded.createOrg('pro');
    const sent = await org.test.post('/v1/emails', {
      from: 'Acme <hi@acme.test>',
      to: [`delivered@${SIM}`],
      subject: 'Embedded',
      html: '<p>x</p>',
    });
    expect(sent.status).toBe(200);
    const res = await request(`${embedded.baseUrl}/metrics`);
    expect(res.statusCode).toBe(200);
    const samples = parse(await res.body.text());
    expect(
      find(samples, 'postline_consumer_lag_events', { kind: 'projection', name: 'emails' }),
    ).toHaveLength(1);
    expect(find(samples, 'postline_queue_depth')).toHaveLength(6);
  });
});
