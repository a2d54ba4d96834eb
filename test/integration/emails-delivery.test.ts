import pg from 'pg';
import { pino } from 'pino';
import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { suppressionStream } from '../../domain/suppressions/suppression.events.ts';
import { ManualClock } from '../../platform/clock.ts';
import { createLogger } from '../../platform/logger.ts';
import { registry } from '../../platform/metrics.ts';
import { DeliveryProcess } from '../../processes/delivery/delivery.process.ts';
import { OutboundMta } from '../../processes/delivery/mta/outbound.ts';
import { EMAIL_RETRIES, maxAttempts } from '../../processes/retry-schedule.ts';
import { SchedulerProcess } from '../../processes/scheduler/scheduler.process.ts';
import { SuppressionPolicyProcess } from '../../processes/suppression-policy/suppression-policy.process.ts';
import { publicData, summaryOf } from '../../processes/webhooks/public-events.v1.ts';
import {
  recordOutcomes,
  startDeliveryAttempt,
  startSending,
  systemMeta,
} from '../../write-side/emails/email.commands.ts';
import { ADMIN_URL } from '../support/databases.ts';
import { verifyDkim } from '../support/dkim.ts';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain, publishDomainRecords, recipientDomainOnLoopback } from '../support/domains.ts';
import { emailEventTypes, emailHistory, expectDeliveredAfterOneDelay, readEmail } from '../support/emails.ts';
import { parseMime } from '../support/mime.ts';
import type { TestOrg } from '../support/service.ts';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts';

const RETRY_DELAYS_MS = EMAIL_RETRIES.delaysMs;
const MAX_ATTEMPTS = maxAttempts(EMAIL_RETRIES);

let mx: SmtpSink;
let acme: TestOrg;
let delivery: DeliveryProcess;
/** Suppressions follow bounces in their own process manager: driven after the delivery runs that bounce. */
let policy: SuppressionPolicyProcess;
const clock = new ManualClock('2026-07-01T09:00:00Z');
const FROM = 'Acme <news@acme-send.test>';

beforeAll(async () => {
  mx = await startSmtpSink({ starttls: true });
});
const { svc, dns } = useDnsService(() => ({
  clock,
  env: { OUTBOUND_SMTP_PORT: String(mx.port), OUTBOUND_TLS_REJECT_UNAUTHORIZED: 'false' },
}));
beforeAll(async () => {
  // Recipients at rcpt.test and other.test: MX on the loopback sink.
  recipientDomainOnLoopback(dns, ['rcpt.test', 'other.test']);
  acme = await svc.createOrg('pro');
  await addVerifiedDomain(acme.live, dns, 'acme-send.test', { open_tracking: true, click_tracking: true });
  delivery = new DeliveryProcess(svc.postline.services);
  policy = new SuppressionPolicyProcess(svc.postline.services);
});
afterAll(async () => {
  await delivery?.stop();
  await policy?.stop();
  await mx?.close();
});
beforeEach(() => mx.reset());

const send = async (body: Record<string, unknown>, client = acme.live) => {
  const r = await client.post('/v1/emails', { from: FROM, subject: 'Hello', text: 'Hi there', ...body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.id as string;
};
const history = (id: string) => emailHistory(svc, id);
const types = (id: string) => emailEventTypes(svc, id);
const email = (id: string, client = acme.live) => readEmail(svc, client, id);

describe('live delivery through the outbound MTA', () => {
  it('delivers headers, bodies and attachments over STARTTLS, DKIM-signed, with a VERP return path', async () => {
    const id = await send({
      to: ['Ann <ann@rcpt.test>'],
      cc: ['bob@other.test'],
      bcc: ['carl@rcpt.test'],
      reply_to: 'help@acme-send.test',
      headers: { 'X-Campaign': 'july' },
      html: '<html><body><p>Hi <a href="https://acme.example/welcome?a=1&amp;b=2">welcome</a></p></body></html>',
      attachments: [
        {
          filename: 'note.txt',
          content: Buffer.from('attached!').toString('base64'),
          content_type: 'text/plain',
        },
      ],
    });
    // One look per destination: rcpt.test and other.test.
    expect(await delivery.runOnce()).toBe(2);
    expect(mx.messages).toHaveLength(2); // one transaction per recipient domain
    const all = mx.messages.flatMap((m) => m.rcptTo).sort();
    expect(all).toEqual(['ann@rcpt.test', 'bob@other.test', 'carl@rcpt.test']);
    for (const m of mx.messages) {
      expect(m.secure).toBe(true);
      expect(m.mailFrom).toBe(`b+${id}@bounces.acme-send.test`);
    }
    const raw = mx.messages[0].raw;
    const parsed = parseMime(raw);
    const header = (name: string) => parsed.headers.get(name);
    expect(header('message-id')).toBe(`<${id}@acme-send.test>`);
    expect(header('subject')).toBe('Hello');
    expect(header('from')).toBe('Acme <news@acme-send.test>');
    expect(header('to')).toBe('Ann <ann@rcpt.test>');
    expect(header('cc')).toBe('bob@other.test');
    expect(header('reply-to')).toBe('help@acme-send.test');
    expect(header('x-campaign')).toBe('july');
    expect(parsed.headers.has('bcc')).toBe(false);
    expect(raw.toString()).not.toContain('carl@rcpt.test');
    const part = (type: string) => parsed.parts.find((p) => p.contentType === type && !p.filename);
    expect(part('text/plain')?.body.toString().trim()).toBe('Hi there');
    const attachment = parsed.parts.find((p) => p.filename === 'note.txt');
    expect(attachment?.body.toString()).toBe('attached!');
    const dkim = await verifyDkim(dns, raw);
    expect(dkim.results[0].status.result).toBe('pass');
    expect(dkim.results[0].signingDomain).toBe('acme-send.test');

    // An attempt per destination (recipient domain), each with its own transaction, in either order.
    const recorded = await types(id);
    expect(recorded.slice(0, 2)).toEqual(['EmailQueued', 'EmailSendingStarted']);
    expect(recorded.slice(2).sort()).toEqual([
      'EmailDelivered',
      'EmailDelivered',
      'EmailDelivered',
      'EmailDeliveryAttemptStarted',
      'EmailDeliveryAttemptStarted',
      'EmailSent',
    ]);
    const attempts = (await history(id)).filter((e) => e.type === 'EmailDeliveryAttemptStarted');
    const started = { startedAt: clock.now().toISOString() };
    const endsBy = new Date(clock.now().getTime() + 35_000).toISOString();
    expect(
      attempts.map((a) => a.data).sort((a: any, b: any) => a.recipients[0].localeCompare(b.recipients[0])),
    ).toEqual([
      { emailId: id, recipients: ['ann@rcpt.test', 'carl@rcpt.test'], ...started, endsBy },
      { emailId: id, recipients: ['bob@other.test'], ...started, endsBy },
    ]);
    const e = await email(id);
    expect(e.status).toBe('delivered');
    expect(e.recipients.every((r: any) => r.status === 'delivered')).toBe(true);
    // Nothing left to do: a second run sends nothing.
    await delivery.runOnce();
    expect(mx.messages).toHaveLength(2);

    // Tracking: the link goes through a signed click URL, a pixel reports opens, both on the domain's verified
    // tracking CNAME.
    const html = part('text/html')!.body.toString();
    const click = /href="(https:\/\/track\.acme-send\.test\/t\/c\/[^"]+)"/.exec(html)?.[1];
    const pixel = /src="(https:\/\/track\.acme-send\.test\/t\/o\/[^"]+)"/.exec(html)?.[1];
    expect(click && pixel).toBeTruthy();
    const local = (u: string) => `${svc.baseUrl}${new URL(u.replace(/&amp;/g, '&')).pathname}`;
    const opened = await request(local(pixel!), { headers: { 'user-agent': 'MailApp/1.0' } });
    expect(opened.statusCode).toBe(200);
    expect(opened.headers['content-type']).toBe('image/gif');
    await opened.body.dump();
    const clicked = await request(local(click!), { headers: { 'user-agent': 'MailApp/1.0' } });
    expect(clicked.statusCode).toBe(302);
    expect(clicked.headers.location).toBe('https://acme.example/welcome?a=1&b=2');
    await clicked.body.dump();
    const forged = await request(local(click!).replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')));
    expect(forged.statusCode).toBe(404);
    await forged.body.dump();
    const events = await history(id);
    // Who opened or clicked is not recorded unless the organization asks for it (emails-privacy.test.ts).
    expect(events.find((x) => x.type === 'EmailOpened')?.data).toEqual({
      emailId: id,
      openedAt: expect.any(String),
    });
    expect(events.find((x) => x.type === 'EmailClicked')?.data).toEqual({
      emailId: id,
      link: 'https://acme.example/welcome?a=1&b=2',
      clickedAt: expect.any(String),
    });
  });

  it('sends an email given as html alone with a text part made from the html; text "" sends none', async () => {
    const html = '<p>Your order <b>#7</b> ships today. <a href="https://acme.example/o/7">Track it</a></p>';
    const made = await send({ to: ['ann@rcpt.test'], text: undefined, html });
    const none = await send({ to: ['bob@rcpt.test'], text: '', html });
    mx.messages.length = 0;
    await delivery.runOnce();
    const parts = (rcpt: string) => {
      const m = mx.messages.find((x) => x.rcptTo.includes(rcpt))!;
      return parseMime(m.raw).parts.filter((p) => !p.filename);
    };
    const text = parts('ann@rcpt.test').find((p) => p.contentType === 'text/plain');
    expect(text?.body.toString().trim()).toBe(
      'Your order #7 ships today. Track it [https://acme.example/o/7]',
    );
    expect(parts('bob@rcpt.test').map((p) => p.contentType)).toEqual(['text/html']);
    // The email keeps what was given: the text part is made when the message is composed.
    expect((await email(made)).text).toBeNull();
    expect((await email(none)).text).toBe('');
  });

  it("tracks on POSTLINE_TRACKING_HOST while the domain's tracking CNAME is not verified", async () => {
    const added = await acme.live.post('/v1/domains', {
      name: 'acme-untracked.test',
      open_tracking: true,
      click_tracking: true,
    });
    publishDomainRecords(dns, added.body, (r) => r.purpose !== 'tracking');
    const verified = await acme.live.post(`/v1/domains/${added.body.id}/verify`);
    expect(verified.body.status).toBe('verified');
    const id = await send({
      from: 'Acme <hi@acme-untracked.test>',
      to: ['ann@rcpt.test'],
      html: '<p><a href="https://acme.example/x">x</a></p>',
    });
    await delivery.runOnce();
    expect((await email(id)).status).toBe('delivered');
    const html = parseMime(mx.messages[0].raw)
      .parts.find((p) => p.contentType === 'text/html')!
      .body.toString();
    expect(html).toMatch(/href="https:\/\/track\.postline\.test\/t\/c\//);
    expect(html).toMatch(/src="https:\/\/track\.postline\.test\/t\/o\//);
  });

  it('retries a 4xx with back-off: delayed, then delivered', async () => {
    mx.scriptRecipient('later@rcpt.test', { code: 451, message: '4.3.0 try again later' });
    const id = await send({ to: ['later@rcpt.test'] });
    await delivery.runOnce();
    let e = await email(id);
    expect(e.status).toBe('sent');
    expect(e.recipients[0]).toMatchObject({ status: 'delayed', attempts: 1, smtp_code: 451 });
    expect(e.recipients[0].next_attempt_at).toBe(
      new Date(clock.now().getTime() + RETRY_DELAYS_MS[0]).toISOString(),
    );
    await delivery.runOnce(); // not due yet
    expect(mx.messages).toHaveLength(0);
    clock.advance(RETRY_DELAYS_MS[0]);
    await delivery.runOnce();
    e = await email(id);
    await expectDeliveredAfterOneDelay(svc, e);
    expect(e.recipients[0].smtp_response).not.toMatch(/^451/);
  });

  it('bounces a 5xx hard and suppresses the address', async () => {
    mx.scriptRecipient('gone@rcpt.test', { code: 550, message: '5.1.1 no such user' }, 'always');
    const id = await send({ to: ['gone@rcpt.test', 'ok@rcpt.test'] });
    await delivery.runOnce();
    await policy.runOnce();
    const e = await email(id);
    expect(e.status).toBe('delivered');
    expect(e.recipients.find((r: any) => r.email === 'gone@rcpt.test')).toMatchObject({
      status: 'bounced',
      bounce_type: 'hard',
      smtp_code: 550,
    });
    const last = (
      await svc.postline.services.store.readStream(suppressionStream(acme.orgId, 'live', 'gone@rcpt.test'))
    ).at(-1);
    await svc.postline.services.readYourWrites.waitFor(['suppressions'], last?.position);
    const again = await acme.live.post('/v1/emails', {
      from: FROM,
      to: ['gone@rcpt.test'],
      subject: 's',
      text: 't',
    });
    expect(again.body.error.code).toBe('all_recipients_suppressed');
  });

  /** The email.bounced webhook data of an email's bounce of `recipient`, as the webhooks process builds it. */
  async function bouncedWebhookData(id: string, recipient: string) {
    const history = await emailHistory(svc, id);
    const bounced = history.find((e) => e.type === 'EmailBounced' && (e.data as any).recipient === recipient);
    return publicData(bounced!, summaryOf(history)) as any;
  }

  it('bounces a 550 5.1.1 hard as invalid_recipient, suppressed, the class in the API and the webhook', async () => {
    mx.scriptRecipient(
      'nobody@rcpt.test',
      { code: 550, message: '5.1.1 <nobody@rcpt.test>: user does not exist' },
      'always',
    );
    const id = await send({ to: ['nobody@rcpt.test'] });
    await delivery.runOnce();
    await policy.runOnce();
    const e = await email(id);
    expect(e.recipients[0]).toMatchObject({
      status: 'bounced',
      bounce_type: 'hard',
      classification: 'invalid_recipient',
    });
    expect((await bouncedWebhookData(id, 'nobody@rcpt.test')).bounce).toMatchObject({
      type: 'hard',
      classification: 'invalid_recipient',
    });
    const last = (
      await svc.postline.services.store.readStream(suppressionStream(acme.orgId, 'live', 'nobody@rcpt.test'))
    ).at(-1);
    expect(last?.type).toBe('SuppressionAdded');
  });

  it('bounces a Spamhaus block softly with its class, never suppressed, counted in /metrics', async () => {
    mx.scriptRecipient(
      'blocked@rcpt.test',
      { code: 550, message: '5.7.1 Service unavailable, Client host [127.0.0.1] blocked using Spamhaus.' },
      'always',
    );
    const id = await send({ to: ['blocked@rcpt.test'] });
    await delivery.runOnce();
    await policy.runOnce();
    const e = await email(id);
    expect(e.status).toBe('bounced');
    expect(e.recipients[0]).toMatchObject({
      status: 'bounced',
      bounce_type: 'soft',
      classification: 'spam_or_reputation_block',
      smtp_code: 550,
    });
    expect(mx.rcptLog.filter((r) => r.recipient === 'blocked@rcpt.test')).toHaveLength(1);
    expect((await bouncedWebhookData(id, 'blocked@rcpt.test')).bounce).toEqual({
      type: 'soft',
      classification: 'spam_or_reputation_block',
      smtp_code: 550,
      message: expect.stringMatching(/Spamhaus/),
    });
    expect((await acme.live.get('/v1/suppressions')).body.data.map((s: any) => s.email)).not.toContain(
      'blocked@rcpt.test',
    );
    expect(await registry.getSingleMetricAsString('postline_bounces_total')).toMatch(
      /postline_bounces_total\{classification="spam_or_reputation_block",type="soft",mode="live"\} [1-9]/,
    );
  });

  it.each([
    ['ms606', '5.7.606 Access denied, banned sending IP [127.0.0.1].', 'spam_or_reputation_block'],
    [
      'gm726',
      '5.7.26 This mail is unauthenticated, which poses a security risk to the sender and Gmail users.',
      'authentication_failure',
    ],
  ] as const)(
    'bounces a provider refusal (%s) softly with its class, never suppressed',
    async (name, reply, cls) => {
      const to = `${name}@rcpt.test`;
      mx.scriptRecipient(to, { code: 550, message: reply }, 'always');
      const id = await send({ to: [to] });
      await delivery.runOnce();
      await policy.runOnce();
      expect((await email(id)).recipients[0]).toMatchObject({
        status: 'bounced',
        bounce_type: 'soft',
        classification: cls,
      });
      expect((await bouncedWebhookData(id, to)).bounce).toMatchObject({ type: 'soft', classification: cls });
      expect((await acme.live.get('/v1/suppressions')).body.data.map((s: any) => s.email)).not.toContain(to);
    },
  );

  it(`gives up after ${MAX_ATTEMPTS} temporary failures: bounced soft, not suppressed`, async () => {
    mx.scriptRecipient('full@rcpt.test', { code: 452, message: '4.2.2 mailbox full' }, 'always');
    const id = await send({ to: ['full@rcpt.test'] });
    await delivery.runOnce();
    for (const wait of RETRY_DELAYS_MS) {
      clock.advance(wait);
      await delivery.runOnce();
    }
    const e = await email(id);
    expect(e.status).toBe('bounced');
    expect(e.recipients[0]).toMatchObject({
      status: 'bounced',
      bounce_type: 'soft',
      attempts: MAX_ATTEMPTS - 1,
    });
    expect(e.recipients[0].smtp_response).toMatch(/gave up after 12 attempts/);
    expect(mx.rcptLog.filter((r) => r.recipient === 'full@rcpt.test')).toHaveLength(MAX_ATTEMPTS);
    expect((await acme.live.get('/v1/suppressions')).body.data.map((s: any) => s.email)).not.toContain(
      'full@rcpt.test',
    );
  });

  it('works off more emails than one claim in one run, and removes every finished job', async () => {
    // 130 jobs: two claims of 100, finishes written in batches; one recipient waits for a retry.
    mx.scriptRecipient('many-later@rcpt.test', { code: 451, message: '4.3.0 try again later' });
    const batch = (n: number, from: number) =>
      Array.from({ length: n }, (_, i) => ({
        from: FROM,
        to: [from + i === 0 ? 'many-later@rcpt.test' : `many${from + i}@rcpt.test`],
        subject: 'Hello',
        text: 'Hi there',
      }));
    for (const [n, from] of [
      [100, 0],
      [30, 100],
    ]) {
      const r = await acme.live.post('/v1/emails/batch', batch(n, from));
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    await delivery.runOnce();
    expect(new Set(mx.messages.flatMap((m) => m.rcptTo)).size).toBe(129);
    const jobs = await svc.postline.services.db.query<{ due_at: Date; claimed_until: Date | null }>(
      'SELECT due_at, claimed_until FROM delivery_jobs',
    );
    expect(jobs.rows).toEqual([
      { due_at: new Date(clock.now().getTime() + RETRY_DELAYS_MS[0]), claimed_until: null },
    ]);
    clock.advance(RETRY_DELAYS_MS[0]);
    await delivery.runOnce();
    expect(mx.messages.flatMap((m) => m.rcptTo)).toContain('many-later@rcpt.test');
    expect((await svc.postline.services.db.query('SELECT 1 FROM delivery_jobs')).rows).toHaveLength(0);
  });

  it('delivers a scheduled email once the scheduler releases it', async () => {
    const sendAt = new Date(clock.now().getTime() + 3600_000).toISOString();
    const id = await send({ to: ['later2@rcpt.test'], send_at: sendAt });
    await delivery.runOnce();
    expect(mx.messages).toHaveLength(0);
    clock.advance(3600_000);
    await new SchedulerProcess(svc.postline.services).runOnce();
    await delivery.runOnce();
    expect(mx.messages).toHaveLength(1);
    expect((await email(id)).status).toBe('delivered');
  });

  it('resumes after a crash without sending twice what was recorded', async () => {
    const id = await send({ to: ['once@rcpt.test'] });
    await delivery.runOnce();
    expect(mx.messages).toHaveLength(1);
    // A crash between recording and removing the job leaves the job behind: the next run finds the outcome
    // in the stream and sends nothing.
    await svc.postline.services.db.query(
      `INSERT INTO delivery_jobs (email_id, destination, org_id, mode, lane, queue, due_at)
       VALUES ($1, 'rcpt.test', $2, 'live', 'transactional', $2 || ':transactional', $3)`,
      [id, acme.orgId, clock.now()],
    );
    const restarted = new DeliveryProcess(svc.postline.services);
    await restarted.runOnce();
    await restarted.stop();
    expect(mx.messages).toHaveLength(1);
    expect((await types(id)).filter((t) => t === 'EmailDelivered')).toHaveLength(1);
  });

  it('after a crash between the send and its record, sends again only once the attempt is over, marked as a possible duplicate', async () => {
    /** Completes the real SMTP transaction, then "dies" before the process can record what the server said. */
    class CrashAfterSend extends OutboundMta {
      override async send(...args: Parameters<OutboundMta['send']>): ReturnType<OutboundMta['send']> {
        await super.send(...args);
        throw new Error('simulated crash after the send');
      }
    }
    const mta = new CrashAfterSend({
      dnsServers: [dns.serverAddress],
      port: mx.port,
      log: pino({ level: 'silent' }),
      tls: { rejectUnauthorized: false },
    });
    const crashing = new DeliveryProcess(svc.postline.services, { mta });
    const id = await send({ to: ['twice@rcpt.test'] });
    const copies = () => mx.messages.filter((m) => m.rcptTo.includes('twice@rcpt.test')).length;
    const startedAt = clock.now().getTime();
    try {
      await crashing.runOnce();
    } finally {
      await crashing.stop();
    }
    expect(copies()).toBe(1); // it went out...
    // ...and only its attempt says so
    expect(await types(id)).toEqual(['EmailQueued', 'EmailSendingStarted', 'EmailDeliveryAttemptStarted']);
    // The failed look gave its job back at once (after a 1-s back-off, not a lease): looked at again, the attempt
    // is in flight until its end (35 s after it started), so nothing goes out.
    clock.advance(1001);
    await delivery.runOnce();
    expect(copies()).toBe(1);
    const job = async () =>
      (await svc.postline.services.db.query('SELECT due_at FROM delivery_jobs WHERE email_id = $1', [id]))
        .rows[0];
    expect((await job()).due_at).toEqual(new Date(startedAt + 35_000));
    // At its end the outcome is unknown. A process that sees the attempt for the first time then (as one would
    // after a database outage) waits 3 s more, by when an owner still alive would have written its outcome...
    clock.set(new Date(startedAt + 35_000));
    const newcomer = new DeliveryProcess(svc.postline.services);
    try {
      await newcomer.runOnce();
    } finally {
      await newcomer.stop();
    }
    expect(copies()).toBe(1);
    expect((await job()).due_at).toEqual(new Date(startedAt + 38_000));
    // ...then sends again; this one had seen the attempt in flight long before.
    clock.advance(3000);
    await delivery.runOnce();
    // The one case of a second copy: the retry says so, for the auditor.
    expect(copies()).toBe(2);
    const attempts = (await history(id)).filter((e) => e.type === 'EmailDeliveryAttemptStarted');
    expect(attempts.map((e) => e.data)).toEqual([
      {
        emailId: id,
        recipients: ['twice@rcpt.test'],
        startedAt: new Date(startedAt).toISOString(),
        endsBy: new Date(startedAt + 35_000).toISOString(),
      },
      {
        emailId: id,
        recipients: ['twice@rcpt.test'],
        startedAt: new Date(startedAt + 38_000).toISOString(),
        endsBy: new Date(startedAt + 73_000).toISOString(),
        outcomeUnknown: ['twice@rcpt.test'],
      },
    ]);
    expect((await types(id)).filter((t) => t === 'EmailDelivered')).toHaveLength(1);
    expect((await email(id)).status).toBe('delivered');
  });

  it('keeps what the server answered while the database is away, and records it once it is back', async () => {
    const services = svc.postline.services;
    const [{ name }] = (await services.db.query<{ name: string }>('SELECT current_database() AS name')).rows;
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    /** The server answers 250; then the database refuses every connection for a second, as in a failover. */
    class DatabaseGoesAway extends OutboundMta {
      override async send(...args: Parameters<OutboundMta['send']>): ReturnType<OutboundMta['send']> {
        const outcomes = await super.send(...args);
        await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
        await admin.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
          [name],
        );
        setTimeout(() => void admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`), 1000);
        return outcomes;
      }
    }
    const away = new DeliveryProcess(services, {
      mta: new DatabaseGoesAway({
        dnsServers: [dns.serverAddress],
        port: mx.port,
        log: pino({ level: 'silent' }),
        tls: { rejectUnauthorized: false },
      }),
    });
    const id = await send({ to: ['kept@rcpt.test'] });
    try {
      expect(await away.runOnce()).toBe(1);
    } finally {
      await away.stop();
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      await admin.end();
    }
    expect(mx.messages.filter((m) => m.rcptTo.includes('kept@rcpt.test'))).toHaveLength(1);
    expect((await types(id)).filter((t) => t === 'EmailDelivered')).toHaveLength(1);
    expect((await services.db.query('SELECT 1 FROM delivery_jobs WHERE email_id = $1', [id])).rows).toEqual(
      [],
    );
    expect((await email(id)).status).toBe('delivered');
  });

  it('stopping, keeps trying during its shutdown grace, then logs what it could not record', async () => {
    const services = svc.postline.services;
    const [{ name }] = (await services.db.query<{ name: string }>('SELECT current_database() AS name')).rows;
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    const lines: string[] = [];
    const log = createLogger('info', { write: (line: string) => void lines.push(line) });
    /** The server answers 250; then the database refuses every connection until the test ends. */
    class DatabaseGone extends OutboundMta {
      override async send(...args: Parameters<OutboundMta['send']>): ReturnType<OutboundMta['send']> {
        const outcomes = await super.send(...args);
        await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
        await admin.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
          [name],
        );
        return outcomes;
      }
    }
    const stopping = new DeliveryProcess(
      { ...services, log, config: { ...services.config, SHUTDOWN_GRACE_MS: 1000 } },
      {
        mta: new DatabaseGone({
          dnsServers: [dns.serverAddress],
          port: mx.port,
          log: pino({ level: 'silent' }),
          tls: { rejectUnauthorized: false },
        }),
      },
    );
    const id = await send({ to: ['lost@rcpt.test'] });
    try {
      const run = stopping.runOnce();
      await mx.waitForMessages(1);
      while (!lines.some((l) => l.includes('kept, and tried again')))
        await new Promise((r) => setTimeout(r, 20));
      await stopping.stop();
      expect(await run).toBe(0);
    } finally {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      await admin.end();
    }
    const lost = lines.map((l) => JSON.parse(l)).find((l) => /could not be recorded before/.test(l.msg));
    expect(lost).toMatchObject({
      level: 50,
      emailId: id,
      outcomes: [{ result: 'delivered', attempt: 1, smtpCode: 250 }],
    });
    // Addresses stay out of the log: the outcomes follow the order of the attempt's recipients.
    expect(lines.join('')).not.toContain('lost@rcpt.test');
    expect(await types(id)).toEqual(['EmailQueued', 'EmailSendingStarted', 'EmailDeliveryAttemptStarted']);
  });

  it('adds the suppression of a hard bounce recorded just before a crash, and only once', async () => {
    const services = svc.postline.services;
    mx.scriptRecipient('later3@rcpt.test', { code: 451, message: '4.3.0 try again later' });
    const id = await send({ to: ['crashed@rcpt.test', 'later3@rcpt.test'] });
    // What a run that crashed right after recording the bounce leaves: the bounce in the stream, no suppression.
    const meta = systemMeta({ orgId: acme.orgId, mode: 'live' });
    await startSending(services, meta, id);
    await recordOutcomes(services, meta, id, `<${id}@acme-send.test>`, [
      {
        recipient: 'crashed@rcpt.test',
        result: 'bounced',
        bounceType: 'hard',
        attempt: 1,
        smtpCode: 550,
        smtpResponse: '550 5.1.1 no such user',
      },
    ]);
    const suppressions = () =>
      services.store.readStream(suppressionStream(acme.orgId, 'live', 'crashed@rcpt.test'));
    // The job was made from EmailQueued; the stream has moved on since: the look goes by the stream.
    await delivery.runOnce();
    await policy.runOnce();
    expect(mx.rcptLog.map((r) => r.recipient)).not.toContain('crashed@rcpt.test');
    const added = await suppressions();
    expect(added.map((e) => e.type)).toEqual(['SuppressionAdded']);
    expect(added[0].data).toMatchObject({ reason: 'hard_bounce', sourceEmailId: id });

    // Lifted by the customer: the next look at the email (the other recipient's retry) leaves it lifted.
    await services.readYourWrites.waitFor(['suppressions'], added[0].position);
    const supId = (added[0].data as { suppressionId: string }).suppressionId;
    expect((await acme.live.delete(`/v1/suppressions/${supId}`)).status).toBe(200);
    clock.advance(RETRY_DELAYS_MS[0]);
    await delivery.runOnce();
    await policy.runOnce();
    expect((await email(id)).status).toBe('delivered');
    expect((await suppressions()).map((e) => e.type)).toEqual(['SuppressionAdded', 'SuppressionRemoved']);
  });

  it('decides on the stream as it stands when another process moved it during the send', async () => {
    const services = svc.postline.services;
    const meta = systemMeta({ orgId: acme.orgId, mode: 'live' });
    let id = '';
    /** While this look sends, "another process" records a hard bounce for one of the recipients. */
    class Racing extends OutboundMta {
      override async send(...args: Parameters<OutboundMta['send']>): ReturnType<OutboundMta['send']> {
        const outcomes = await super.send(...args);
        await recordOutcomes(services, meta, id, `<${id}@acme-send.test>`, [
          {
            recipient: 'raced@rcpt.test',
            result: 'bounced',
            bounceType: 'hard',
            attempt: 1,
            smtpCode: 550,
            smtpResponse: '550 5.1.1 no such user',
          },
        ]);
        return outcomes;
      }
    }
    const racing = new DeliveryProcess(services, {
      mta: new Racing({
        dnsServers: [dns.serverAddress],
        port: mx.port,
        log: pino({ level: 'silent' }),
        tls: { rejectUnauthorized: false },
      }),
    });
    id = await send({ to: ['raced@rcpt.test', 'calm@rcpt.test'] });
    try {
      await racing.runOnce();
    } finally {
      await racing.stop();
    }
    await policy.runOnce();
    // The other process's outcome stands; this look's own is recorded beside it.
    const history = await types(id);
    expect(history.filter((t) => t === 'EmailBounced')).toHaveLength(1);
    expect(history.filter((t) => t === 'EmailDelivered')).toHaveLength(1);
    // The bounce another process recorded is suppressed like any other.
    const suppression = await services.store.readStream(
      suppressionStream(acme.orgId, 'live', 'raced@rcpt.test'),
    );
    expect(suppression.map((e) => e.type)).toEqual(['SuppressionAdded']);
    expect(suppression[0].data).toMatchObject({ reason: 'hard_bounce', sourceEmailId: id });
  });

  it("takes a just-queued email's stream from the log, and decides on the stream as it stands when another process moved it since", async () => {
    const services = svc.postline.services;
    const meta = systemMeta({ orgId: acme.orgId, mode: 'live' });
    const reads: string[] = [];
    const readStream = services.store.readStream.bind(services.store);
    services.store.readStream = (streamId, options) => {
      reads.push(streamId);
      return readStream(streamId, options);
    };
    /** Before this process looks at what its consumer just noted, "another process" starts an attempt. */
    class Overtaken extends DeliveryProcess {
      racing = false;
      protected override async consume(...args: Parameters<DeliveryProcess['consume']>) {
        await super.consume(...args);
        for (const e of args[1].filter((e) => this.racing && e.type === 'EmailQueued')) {
          const endsBy = new Date(clock.now().getTime() + 60_000).toISOString();
          const to = (e.data as { to: string[] }).to;
          await startDeliveryAttempt(services, meta, e.streamId.slice('email-'.length), {
            recipients: to,
            endsBy,
          });
        }
      }
    }
    const overtaken = new Overtaken(services);
    try {
      const calm = await send({ to: ['handed@rcpt.test'] });
      await overtaken.runOnce();
      expect(mx.messages.flatMap((m) => m.rcptTo)).toEqual(['handed@rcpt.test']);
      // Accepted, attempted and delivered without reading the email's stream back.
      expect(reads.filter((s) => s === `email-${calm}`)).toEqual([]);

      overtaken.racing = true;
      mx.reset();
      const raced = await send({ to: ['overtaken@rcpt.test'] });
      await overtaken.runOnce();
      // The look decided on the stream the log brought; its append found the stream moved, the command read it
      // again and saw the other process's attempt in flight: nothing was sent.
      expect(mx.messages).toHaveLength(0);
      expect(reads.filter((s) => s === `email-${raced}`).length).toBeGreaterThan(0);
      expect((await types(raced)).filter((t) => t === 'EmailDeliveryAttemptStarted')).toHaveLength(1);
    } finally {
      services.store.readStream = readStream;
      await overtaken.stop();
    }
  });

  it('never sends a test-mode email', async () => {
    const id = await send({ to: ['ann@rcpt.test'], from: 'x@anything.test' }, acme.test);
    await delivery.runOnce();
    expect(mx.messages).toHaveLength(0);
    expect(await types(id)).toEqual(['EmailQueued']);
  });
});

describe('smarthost mode', () => {
  it('sends everything through an authenticating relay instead of MX look-ups', async () => {
    const relay = await startSmtpSink({ auth: { user: 'relay-user', pass: 's3cret' } });
    const mta = new OutboundMta({
      dnsServers: [dns.serverAddress],
      port: 1,
      smarthostUrl: `smtp://relay-user:s3cret@127.0.0.1:${relay.port}`,
      log: pino({ level: 'silent' }),
      tls: { rejectUnauthorized: false },
    });
    const viaRelay = new DeliveryProcess(svc.postline.services, { mta });
    try {
      await delivery.runOnce(); // nothing pending for the MX path
      const id = await send({ to: ['nomx@nowhere.invalid', 'ann@rcpt.test'] });
      await viaRelay.runOnce();
      // One transaction per destination, as through MX hosts.
      expect(relay.messages).toHaveLength(2);
      expect(relay.messages.every((m) => m.user === 'relay-user')).toBe(true);
      expect(relay.messages.flatMap((m) => m.rcptTo).sort()).toEqual([
        'ann@rcpt.test',
        'nomx@nowhere.invalid',
      ]);
      expect(mx.messages).toHaveLength(0);
      expect((await email(id)).status).toBe('delivered');
    } finally {
      await viaRelay.stop();
      await relay.close();
    }
  });
});
