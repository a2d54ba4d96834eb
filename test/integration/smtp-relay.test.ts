import { execFile, execFileSync } from 'node:child_process';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import nodemailer from 'nodemailer';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { createLogger } from '../../platform/logger.ts';
import { REPLIES } from '../../smtp/replies.ts';
import { ADMIN_URL } from '../support/databases.ts';
import { verifyDkim } from '../support/dkim.ts';
import type { TestDnsServer } from '../support/dns-server.ts';
import { addVerifiedDomain } from '../support/domains.ts';
import { useLiveService } from '../support/live-service.ts';
import { parseMime } from '../support/mime.ts';
import { PATIENCE_MS } from '../support/patience.ts';
import { authPlain, type RawSmtp, rawSmtp } from '../support/raw-smtp.ts';
import { startTestService, type TestOrg, type TestService } from '../support/service.ts';
import type { SmtpSink } from '../support/smtp-sink.ts';
import type { WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * The SMTP relay as `npm start` runs it (every process manager on): real clients submit, the outbound MTA
 * delivers to a real SMTP server found through a real DNS server, webhooks reach a real receiver.
 */

const live = useLiveService({
  sink: { starttls: true },
  env: { SMTP_SUBMISSION_PORT: '0', SMTP_SUBMISSIONS_PORT: '0', SMTP_HOSTNAME: 'relay.postline.test' },
});
const { svc } = live;
let dns: TestDnsServer;
let mx: SmtpSink;
let receiver: WebhookReceiver;
let acme: TestOrg;
let submission: number;
let submissions: number;
const FROM = 'Acme <news@acme-relay.test>';

beforeAll(async () => {
  ({ dns, sink: mx, receiver } = live);
  submission = svc.postline.smtp!.submissionPort!;
  submissions = svc.postline.smtp!.submissionsPort!;
  acme = await svc.createOrg('pro');
  await addVerifiedDomain(acme.live, dns, 'acme-relay.test');
  await receiver.subscribe(acme.live, ['email.delivered']);
});
beforeEach(() => mx.reset());

const transport = (key: string, implicitTls = false) =>
  nodemailer.createTransport({
    host: '127.0.0.1',
    port: implicitTls ? submissions : submission,
    secure: implicitTls,
    requireTLS: !implicitTls,
    auth: { user: 'postline', pass: key },
    tls: { rejectUnauthorized: false },
  });

/** The email id in `250 2.0.0 Ok: queued as em_…`. */
const queuedId = (response: string) => {
  const m = /^250 2\.0\.0 Ok: queued as (em_[0-9a-z]+)$/.exec(response);
  expect(m, response).not.toBeNull();
  return m![1];
};

/** Waits for the email to reach `status` (the service delivers in the background). */
async function until(id: string, status: string, client = acme.live) {
  for (const end = Date.now() + PATIENCE_MS; Date.now() < end; ) {
    const r = await client.get(`/v1/emails/${id}`);
    if (r.body.status === status) return r.body;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`email ${id} never reached ${status}`);
}

async function dkimOf(raw: Buffer) {
  const result = await verifyDkim(dns, raw);
  return result.results[0];
}

describe('the SMTP relay with a live key', () => {
  it('takes a message over STARTTLS and delivers it as submitted, DKIM-signed, with its Bcc only in the envelope', async () => {
    const info = await transport(acme.liveKey).sendMail({
      from: FROM,
      to: 'Ann <ann@rcpt.test>',
      cc: 'cid@rcpt.test',
      bcc: 'hidden@rcpt.test',
      subject: 'Über SMTP',
      text: 'Hello over SMTP',
      html: '<p>Hello <img src="cid:logo@acme"></p>',
      messageId: '<client-chosen@acme-relay.test>',
      headers: { 'X-Postline-Tags': 'welcome, smtp', 'X-Campaign': 'july' },
      attachments: [
        { filename: 'note.txt', content: 'attached!' },
        { filename: 'logo.png', content: Buffer.from([137, 80, 78, 71]), cid: 'logo@acme' },
      ],
    });
    const id = queuedId(info.response);
    const [message] = await mx.waitForMessages(1);
    expect(message.rcptTo.sort()).toEqual(['ann@rcpt.test', 'cid@rcpt.test', 'hidden@rcpt.test']);
    expect(message.mailFrom).toBe(`b+${id}@bounces.acme-relay.test`);
    const parsed = parseMime(message.raw);
    expect(parsed.headers.get('message-id')).toBe('<client-chosen@acme-relay.test>');
    expect(parsed.headers.get('x-campaign')).toBe('july');
    expect(parsed.headers.has('bcc')).toBe(false);
    expect(parsed.headers.has('x-postline-tags')).toBe(false);
    expect(message.raw.toString()).not.toContain('hidden@rcpt.test');
    expect(parsed.headers.get('received')).toContain(
      `by relay.postline.test (Postline) with ESMTPSA id ${id}`,
    );
    expect(parsed.parts.find((p) => p.filename === 'note.txt')?.body.toString()).toBe('attached!');
    const dkim = await dkimOf(message.raw);
    expect(dkim.status.result).toBe('pass');
    expect(dkim.signingDomain).toBe('acme-relay.test');

    const email = await until(id, 'delivered');
    expect(email).toMatchObject({
      from: 'Acme <news@acme-relay.test>',
      to: ['Ann <ann@rcpt.test>'],
      cc: ['cid@rcpt.test'],
      bcc: ['hidden@rcpt.test'],
      subject: 'Über SMTP',
      text: 'Hello over SMTP',
      html: '<p>Hello <img src="cid:logo@acme"></p>',
      tags: ['welcome', 'smtp'],
      message_id: '<client-chosen@acme-relay.test>',
    });
    const attachments = await acme.live.get(`/v1/emails/${id}/attachments`);
    expect(attachments.body.data.map((a: any) => [a.filename, a.content_type, a.content_id, a.size])).toEqual(
      // In the message's MIME order: the inline image sits with the html, before the attachment.
      [
        ['logo.png', 'image/png', 'logo@acme', 4],
        ['note.txt', 'text/plain', null, 9],
      ],
    );
    const events = await acme.live.get(`/v1/emails/${id}/events`);
    expect(events.body.data[0]).toMatchObject({ type: 'email.queued' });
    const log = await svc.postline.services.store.readStream(`email-${id}`);
    expect(log[0]).toMatchObject({ type: 'EmailQueued', metadata: { actor: 'smtp' } });
    await receiver.waitFor(4); // three recipients delivered, after the webhook's test event
    const delivered = receiver.ofType('email.delivered');
    expect(delivered.map((h) => h.payload.data.email_id)).toEqual([id, id, id]);
    // Signed as every webhook is: the standardwebhooks verifier accepts each with the endpoint's secret.
    expect(delivered.map((h) => h.verifiedWith)).toEqual(Array(3).fill([receiver.secrets[0]]));
  });

  it('takes a message from nodemailer over implicit TLS (port 2465 in production)', async () => {
    const info = await transport(acme.liveKey, true).sendMail({
      from: FROM,
      to: 'ann@rcpt.test',
      subject: 'Over implicit TLS',
      text: 'Hello over SMTPS',
    });
    const id = queuedId(info.response);
    const [message] = await mx.waitForMessages(1);
    expect(message.mailFrom).toBe(`b+${id}@bounces.acme-relay.test`);
    expect((await dkimOf(message.raw)).status.result).toBe('pass');
    expect(await until(id, 'delivered')).toMatchObject({
      subject: 'Over implicit TLS',
      text: 'Hello over SMTPS',
    });
  });

  it('takes a message over implicit TLS, adding the Message-ID and Date it lacks', async () => {
    const c = await rawSmtp(submissions, { tls: true });
    expect(c.greeting.code).toBe(220);
    expect(c.greeting.text).toBe('relay.postline.test ESMTP Postline relay');
    const ehlo = await c.command('EHLO client.test');
    expect([ehlo.code, ehlo.text]).toEqual([250, expect.stringContaining('ENHANCEDSTATUSCODES')]);
    // Each reply with one enhanced code (RFC 2034), smtp-server's own ones as the catalogue's.
    expect(await c.command(`AUTH PLAIN ${authPlain(acme.liveKey)}`)).toEqual({
      code: 235,
      text: expect.stringMatching(/^2\.7\.0 /),
    });
    expect(await c.command('MAIL FROM:<news@acme-relay.test>')).toEqual({
      code: 250,
      text: expect.stringMatching(/^2\.1\.0 /),
    });
    expect(await c.command('RCPT TO:<ann@rcpt.test>')).toEqual({
      code: 250,
      text: expect.stringMatching(/^2\.1\.5 /),
    });
    expect((await c.command('DATA')).code).toBe(354);
    c.write('From: news@acme-relay.test\r\nTo: ann@rcpt.test\r\nSubject: bare\r\n\r\nNo ids here.\r\n.\r\n');
    const reply = await c.reply();
    expect(reply.text).toMatch(/^2\.0\.0 Ok: queued as em_\w+$/);
    const id = queuedId(`${reply.code} ${reply.text}`);
    const [message] = await mx.waitForMessages(1);
    const headers = parseMime(message.raw).headers;
    expect(headers.get('message-id')).toBe(`<${id}@acme-relay.test>`);
    expect(headers.get('date')).toMatch(/^\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d \+0000$/);
    expect((await dkimOf(message.raw)).status.result).toBe('pass');
    expect((await until(id, 'delivered')).message_id).toBe(`<${id}@acme-relay.test>`);
    await c.command('QUIT');
  });

  it('answers the first email again for a repeated X-Postline-Idempotency-Key, and schedules with X-Postline-Send-At', async () => {
    const sendAt = new Date(Date.now() + 3600_000).toISOString();
    const mail = {
      from: FROM,
      to: 'ann@rcpt.test',
      subject: 'Once',
      text: 'only once',
      messageId: '<once@acme-relay.test>',
      date: new Date('2026-11-24T10:00:00Z'),
      headers: { 'X-Postline-Idempotency-Key': 'smtp-once-1', 'X-Postline-Send-At': sendAt },
    };
    const first = queuedId((await transport(acme.liveKey).sendMail(mail)).response);
    const second = queuedId((await transport(acme.liveKey).sendMail(mail)).response);
    expect(second).toBe(first);
    const email = await until(first, 'scheduled');
    expect(email.send_at).toBe(sendAt);
    const list = await acme.live.get('/v1/emails?limit=100');
    expect(list.body.data.filter((e: any) => e.subject === 'Once')).toHaveLength(1);
  });

  it('cuts a subject longer than 998 characters before a character it would split, and takes the message', async () => {
    const subject = `${'a'.repeat(997)}😀`; // 999 UTF-16 units: the 998th is the emoji's first half
    const info = await transport(acme.testKey).sendMail({
      from: 'dev@unregistered.test',
      to: 'delivered@simulator.postline.dev',
      subject,
      text: 'long subject',
    });
    const email = await until(queuedId(info.response), 'delivered', acme.test);
    expect(email.subject).toBe('a'.repeat(997));
  });

  it('simulates a test key’s message and delivers nothing', async () => {
    const info = await transport(acme.testKey).sendMail({
      from: 'dev@unregistered.test',
      to: 'delivered@simulator.postline.dev',
      subject: 'Test mode',
      text: 'simulated',
    });
    const id = queuedId(info.response);
    const email = await until(id, 'delivered', acme.test);
    expect(email.to).toEqual(['delivered@simulator.postline.dev']);
    expect(mx.messages).toHaveLength(0);
  });
});

describe('the SMTP relay and X-Postline-Idempotency-Key', () => {
  it('answers 451 to the same message and key while the first is in flight, and the retries 250 with its id', async () => {
    const org = await svc.createOrg('free');
    const message =
      'From: dev@any.test\r\nTo: delivered@simulator.postline.dev\r\nSubject: once\r\n' +
      'X-Postline-Idempotency-Key: three-at-once\r\n\r\nonly once\r\n.\r\n';
    const atData = async (c: RawSmtp) => {
      await c.command('MAIL FROM:<dev@any.test>');
      await c.command('RCPT TO:<delivered@simulator.postline.dev>');
      expect((await c.command('DATA')).code).toBe(354);
    };
    const sessions = await Promise.all([1, 2, 3].map(() => rawSmtp(submissions, { tls: true })));
    for (const c of sessions) {
      await c.command('EHLO client.test');
      expect((await c.command(`AUTH PLAIN ${authPlain(org.testKey)}`)).code).toBe(235);
      await atData(c);
    }
    // The first message to claim the key is held at its quota (a Free plan's month counts the emails the
    // `email_usage` read model has) by a lock on that table the test takes and does not release: it stays in flight
    // until the test rolls back. Not by a lock on an append: appends in flight share a statement (group commit),
    // so the other messages' claims would be held with it.
    const hold = new pg.Client({ connectionString: svc.postline.services.config.DATABASE_URL });
    await hold.connect();
    const answers: { code: number; text: string; session: RawSmtp }[] = [];
    try {
      await hold.query('BEGIN');
      await hold.query('LOCK TABLE email_usage IN ACCESS EXCLUSIVE MODE');
      const replies = sessions.map((c) =>
        c.reply().then((r) => {
          answers.push({ ...r, session: c });
        }),
      );
      const two = new Promise<void>((resolve) => {
        for (const r of replies) r.then(() => answers.length === 2 && resolve());
      });
      for (const c of sessions) c.write(message);
      await two;
      expect(answers.map((a) => [a.code, a.text])).toEqual([
        [451, `4.3.0 ${REPLIES.inFlight[2]}`],
        [451, `4.3.0 ${REPLIES.inFlight[2]}`],
      ]);
      await hold.query('ROLLBACK');
      await Promise.all(replies);
    } finally {
      await hold.end();
    }
    const first = answers[2];
    const id = queuedId(`${first.code} ${first.text}`);
    // The clients send again, as an MTA does after a 451: the email of the first.
    for (const { session } of answers.slice(0, 2)) {
      await atData(session);
      session.write(message);
      const again = await session.reply();
      expect(queuedId(`${again.code} ${again.text}`)).toBe(id);
    }
    for (const c of sessions) c.close();
    await until(id, 'delivered', org.test);
    const list = await org.test.get('/v1/emails?limit=100');
    expect(list.body.data.map((e: { id: string }) => e.id)).toEqual([id]);
  });
});

/** swaks with TLS (Debian's needs libnet-ssleay-perl for it): the relay offers AUTH only after STARTTLS. */
const hasSwaks = (() => {
  let support = '';
  try {
    support = execFileSync('swaks', ['--support'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch {
    console.log('swaks not installed: its relay test skipped (apt-get install swaks; .ci/run installs it)');
    return false;
  }
  if (/TLS supported/.test(support)) return true;
  console.log(
    'swaks has no TLS: its relay test skipped (apt-get install libnet-ssleay-perl; .ci/run installs it)',
  );
  return false;
})();

describe.skipIf(!hasSwaks)('swaks, the SMTP test tool', () => {
  it('submits over STARTTLS with AUTH LOGIN, and the message is delivered', async () => {
    const { stdout } = await promisify(execFile)('swaks', [
      ...['--server', '127.0.0.1', '--port', String(submission), '--tls'],
      ...['--auth', 'LOGIN', '--auth-user', 'postline', '--auth-password', acme.liveKey],
      ...['--from', 'news@acme-relay.test', '--to', 'ann@rcpt.test'],
      ...['--header', 'Subject: from swaks', '--body', 'Sent with swaks.'],
    ]);
    const id = /<~ {2}250 2\.0\.0 Ok: queued as (em_[0-9a-z]+)/.exec(stdout)?.[1];
    expect(id, stdout).toBeDefined();
    const [message] = await mx.waitForMessages(1);
    expect(message.rcptTo).toEqual(['ann@rcpt.test']);
    expect((await dkimOf(message.raw)).status.result).toBe('pass');
    expect((await until(id!, 'delivered')).subject).toBe('from swaks');
  });
});

describe('the SMTP relay refuses', () => {
  const session = async (key = acme.liveKey) => {
    const c = await rawSmtp(submissions, { tls: true });
    await c.command('EHLO client.test');
    expect((await c.command(`AUTH PLAIN ${authPlain(key)}`)).code).toBe(235);
    return c;
  };
  /** A session whose transaction from news@acme-relay.test to ann@rcpt.test is at DATA: the message comes next. */
  const atData = async () => {
    const c = await session();
    await c.command('MAIL FROM:<news@acme-relay.test>');
    await c.command('RCPT TO:<ann@rcpt.test>');
    await c.command('DATA');
    return c;
  };

  it('a MAIL or RCPT parameter of an extension it does not announce (555 5.5.4), not SMTPUTF8 either', async () => {
    const c = await session();
    expect(await c.command('MAIL FROM:<news@acme-relay.test> SMTPUTF8')).toEqual({
      code: 555,
      text: '5.5.4 Unsupported parameter SMTPUTF8: MAIL FROM takes only SIZE, BODY, AUTH here',
    });
    expect((await c.command('MAIL FROM:<news@acme-relay.test> BODY=8BITMIME AUTH=<>')).code).toBe(250);
    expect((await c.command('RCPT TO:<ann@rcpt.test> ORCPT=rfc822;ann@rcpt.test')).code).toBe(555);
    expect((await c.command('RCPT TO:<ann@rcpt.test>')).code).toBe(250);
    c.close();
  });

  it('a wrong key (535 5.7.8), MAIL before AUTH (530 5.7.0) and AUTH before STARTTLS', async () => {
    const c = await rawSmtp(submissions, { tls: true });
    await c.command('EHLO client.test');
    const wrong = await c.command(`AUTH PLAIN ${authPlain('pk_live_nope')}`);
    expect([wrong.code, wrong.text.slice(0, 5)]).toEqual([535, '5.7.8']);
    const mail = await c.command('MAIL FROM:<news@acme-relay.test>');
    expect([mail.code, mail.text.slice(0, 5)]).toEqual([530, '5.7.0']);
    c.close();

    const plain = await rawSmtp(submission);
    expect((await plain.command('EHLO client.test')).text).toContain('STARTTLS');
    const early = await plain.command(`AUTH PLAIN ${authPlain(acme.liveKey)}`);
    expect(early.code).toBe(538);
    plain.close();
    await expect(
      transport('pk_live_nope').sendMail({ from: FROM, to: 'a@rcpt.test', text: 'x' }),
    ).rejects.toThrow(/535/);
  });

  it('offers AUTH on the STARTTLS port only once TLS is up, and answers AUTH before it 538', async () => {
    const c = await rawSmtp(submission);
    const plain = await c.command('EHLO client.test');
    expect(plain.text.split('\n')).toContain('STARTTLS');
    expect(plain.text).not.toMatch(/^AUTH/m);
    expect((await c.command(`AUTH PLAIN ${authPlain(acme.liveKey)}`)).code).toBe(538);
    expect((await c.startTls()).code).toBe(220);
    const secure = await c.command('EHLO client.test');
    expect(secure.text.split('\n')).toContain('AUTH PLAIN LOGIN');
    expect(secure.text).not.toMatch(/^STARTTLS/m);
    expect((await c.command(`AUTH PLAIN ${authPlain(acme.liveKey)}`)).code).toBe(235);
    c.close();
    // With TLS from the first byte it is offered at once.
    const implicit = await rawSmtp(submissions, { tls: true });
    expect((await implicit.command('EHLO client.test')).text.split('\n')).toContain('AUTH PLAIN LOGIN');
    implicit.close();
  });

  it('a From domain the organization has not verified (550 5.7.1), and a key deleted since AUTH', async () => {
    await expect(
      transport(acme.liveKey).sendMail({
        from: 'me@not-ours.test',
        to: 'a@rcpt.test',
        subject: 's',
        text: 'x',
      }),
    ).rejects.toThrow(/550 5\.7\.1 .*not-ours\.test/);

    const org = await svc.createOrg('pro');
    const key = await org.live.post('/v1/api-keys', { name: 'smtp' });
    const c = await session(key.body.key);
    const deleted = await org.live.delete(`/v1/api-keys/${key.body.id}`);
    expect(deleted.status).toBe(200);
    const mail = await c.command('MAIL FROM:<news@acme-relay.test>');
    expect([mail.code, mail.text.slice(0, 5)]).toEqual([535, '5.7.8']);
    c.close();
  });

  it('a sending_access key restricted to one domain sending from another (550 5.7.1), and takes its own', async () => {
    const other = await addVerifiedDomain(acme.live, dns, 'other-relay.test');
    const key = await acme.live.post('/v1/api-keys', {
      name: 'relay only',
      permission: 'sending_access',
      domain_id: other.id,
    });
    expect(key.status).toBe(201);
    await expect(
      transport(key.body.key).sendMail({ from: FROM, to: 'ann@rcpt.test', subject: 's', text: 'x' }),
    ).rejects.toThrow(/550 5\.7\.1 This API key may only send from other-relay\.test/);
    const info = await transport(key.body.key).sendMail({
      from: 'hi@other-relay.test',
      to: 'ann@rcpt.test',
      subject: 's',
      text: 'x',
    });
    queuedId(info.response);
  });

  it('the 51st recipient (452 4.5.3), an invalid address (501 5.1.3) and an oversized message (552)', async () => {
    const c = await session();
    expect((await c.command('MAIL FROM:<news@acme-relay.test>')).code).toBe(250);
    const bad = await c.command('RCPT TO:<ann@localhost>');
    expect(bad).toEqual({ code: 501, text: '5.1.3 Invalid address: has an invalid domain "localhost"' });
    for (let i = 0; i < 50; i++) expect((await c.command(`RCPT TO:<r${i}@rcpt.test>`)).code).toBe(250);
    const over = await c.command('RCPT TO:<r50@rcpt.test>');
    expect([over.code, over.text.slice(0, 5)]).toEqual([452, '4.5.3']);
    expect((await c.command('RSET')).code).toBe(250);
    const declared = await c.command('MAIL FROM:<news@acme-relay.test> SIZE=50000000');
    expect(declared.code).toBe(552);
    expect((await c.command('MAIL FROM:<news@acme-relay.test>')).code).toBe(250);
    expect((await c.command('RCPT TO:<ann@rcpt.test>')).code).toBe(250);
    expect((await c.command('DATA')).code).toBe(354);
    const line = `${'x'.repeat(998)}\r\n`;
    const chunk = Buffer.from(line.repeat(1024)); // about 1 MB
    c.write('From: news@acme-relay.test\r\nTo: ann@rcpt.test\r\nSubject: big\r\n\r\n');
    for (let i = 0; i < 41; i++) c.write(chunk);
    c.write('.\r\n');
    const reply = await c.reply();
    expect([reply.code, reply.text.slice(0, 5)]).toEqual([552, '5.3.4']);
    c.close();
  });

  it.each([
    ['bare LF line endings', 'Subject: s\n\nline one\nline two\r\n'],
    ['a bare CR', 'Subject: s\r\n\r\nline\rmore\r\n'],
    ['a NUL byte', 'Subject: s\r\n\r\nnul \0 here\r\n'],
    ['a line over 998 characters', `Subject: s\r\n\r\n${'y'.repeat(999)}\r\n`],
    ['8-bit data without BODY=8BITMIME', 'Subject: s\r\n\r\nd\u00e9j\u00e0 vu\r\n'],
  ])('a message with %s (554 5.6.x), and the session goes on', async (_, content) => {
    const c = await atData();
    c.write(`From: news@acme-relay.test\r\nTo: ann@rcpt.test\r\n${content}.\r\n`);
    const reply = await c.reply();
    expect(reply.code).toBe(554);
    expect(reply.text).toMatch(/^5\.6\.[07] /);
    expect((await c.command('NOOP')).code).toBe(250);
    c.close();
  });

  it.each([
    // =00 decodes to NUL in the text part; U+D800 alone, encoded as UTF-16, is a lone surrogate in the subject.
    [
      'a NUL in a quoted-printable body',
      'Content-Transfer-Encoding: quoted-printable\r\nSubject: s\r\n\r\nnul=00here\r\n',
      'text',
    ],
    ['a lone surrogate in an encoded subject', 'Subject: =?utf-16be?B?2AA=?=\r\n\r\nbody\r\n', 'subject'],
  ])(
    'a message whose decoded text the stores cannot hold, %s: 550 naming the field, no email',
    async (_, content, field) => {
      const listed = async () => (await acme.live.get('/v1/emails?limit=100')).body.data.length;
      const before = await listed();
      const c = await atData();
      c.write(
        `From: news@acme-relay.test\r\nTo: ann@rcpt.test\r\nMessage-ID: <poison-${field}@acme-relay.test>\r\n${content}.\r\n`,
      );
      const reply = await c.reply();
      expect([reply.code, reply.text.slice(0, 5)]).toEqual([550, '5.6.0']);
      expect(reply.text).toContain(field);
      expect((await c.command('NOOP')).code).toBe(250);
      c.close();
      expect(await listed()).toBe(before);
    },
  );

  it.each([
    ['<LF>.<LF>', '\n.\n'],
    ['<LF>.<CR><LF>', '\n.\r\n'],
    ['<CR><LF>.<LF>', '\r\n.\n'],
    ['<CR>.<CR>', '\r.\r'],
  ])('SMTP smuggling with %s: no second message is accepted nor delivered', async (_, end) => {
    const c = await atData();
    const smuggled =
      'MAIL FROM:<news@acme-relay.test>\r\nRCPT TO:<victim@rcpt.test>\r\nDATA\r\n' +
      'From: ceo@acme-relay.test\r\nTo: victim@rcpt.test\r\nSubject: smuggled\r\n\r\nsmuggled\r\n';
    c.write(
      `From: news@acme-relay.test\r\nTo: ann@rcpt.test\r\nSubject: first\r\n\r\nfirst${end}${smuggled}.\r\n`,
    );
    const reply = await c.reply();
    expect([reply.code, reply.text.slice(0, 5)]).toEqual([554, '5.6.0']);
    // The whole DATA, smuggled part included, was one refused message: the next command is answered as one.
    expect((await c.command('NOOP')).code).toBe(250);
    c.close();
    const list = await acme.live.get('/v1/emails?limit=100');
    expect(list.body.data.filter((e: any) => ['first', 'smuggled'].includes(e.subject))).toEqual([]);
  });

  it('over-long commands and NUL bytes in commands, and serves the next session as before', async () => {
    const c = await session();
    const nul = await c.command('MAIL FROM:<news\0@acme-relay.test>');
    expect(nul.code).toBeGreaterThanOrEqual(500);
    c.write(`NOOP ${'x'.repeat(20_000)}\r\n`);
    const long = await c.reply();
    expect(long.code).toBe(421);
    await c.closed;
    const next = await session();
    expect((await next.command('MAIL FROM:<news@acme-relay.test>')).code).toBe(250);
    next.close();
  });

  it('a session that keeps making errors (421 4.7.0 at the tenth refusal)', async () => {
    const c = await session();
    expect((await c.command('MAIL FROM:<news@acme-relay.test>')).code).toBe(250);
    for (let i = 0; i < 9; i++) {
      const r = await c.command(`RCPT TO:<r${i}@localhost>`);
      expect([r.code, r.text.slice(0, 5)]).toEqual([501, '5.1.3']);
    }
    const closing = await c.command('RCPT TO:<r9@localhost>');
    expect([closing.code, closing.text.slice(0, 5)]).toEqual([421, '4.7.0']);
    await c.closed;
  });
});

describe('the SMTP relay under abuse', () => {
  let strict: TestService;
  let port: number;
  let org: TestOrg;
  const logged: string[] = [];
  // Time stands still unless a test moves it: failures are counted in windows of a minute, which must not end
  // between a test's steps.
  const clock = new ManualClock(new Date());
  beforeAll(async () => {
    strict = await startTestService({
      clock,
      log: createLogger(
        'info',
        new Writable({
          write(chunk, _encoding, done) {
            logged.push(String(chunk));
            done();
          },
        }),
      ),
      env: {
        SMTP_SUBMISSION_PORT: '0',
        SMTP_SUBMISSIONS_PORT: 'off',
        SMTP_ALLOW_INSECURE_AUTH: 'true',
        SMTP_MAX_CONNECTIONS_PER_IP: '3',
        SMTP_IDLE_TIMEOUT_MS: '3000',
        SMTP_SESSION_TIMEOUT_MS: '10000',
        AUTH_FAILURES_PER_MINUTE: '3',
      },
    });
    port = strict.postline.smtp!.submissionPort!;
    org = await strict.createOrg('pro');
    expect(strict.postline.smtp!.submissionsPort).toBeUndefined();
  });
  afterAll(() => strict?.close());

  it('refuses a connection beyond the per-address limit (421 4.7.0)', async () => {
    const open = await Promise.all([rawSmtp(port), rawSmtp(port), rawSmtp(port)]);
    expect(open.map((c) => c.greeting.code)).toEqual([220, 220, 220]);
    const fourth = await rawSmtp(port);
    expect([fourth.greeting.code, fourth.greeting.text.slice(0, 5)]).toEqual([421, '4.7.0']);
    await fourth.closed;
    for (const c of open) c.close();
  });

  const noProgress = { code: 421, text: `4.4.2 ${REPLIES.idleTimeout[2]}` };
  /** An authenticated session whose transaction is at DATA. */
  const atData = async () => {
    const c = await rawSmtp(port);
    await c.command('EHLO client.test');
    expect((await c.command(`AUTH PLAIN ${authPlain(org.testKey)}`)).code).toBe(235);
    await c.command('MAIL FROM:<dev@any.test>');
    await c.command('RCPT TO:<delivered@simulator.postline.dev>');
    expect((await c.command('DATA')).code).toBe(354);
    return c;
  };
  /** Writes `next()` every 200 ms (ten times faster than the time-out) until the server answers. */
  const dripping = async (c: RawSmtp, next: () => string) => {
    const timer = setInterval(() => c.write(next()), 200);
    try {
      return await c.reply();
    } finally {
      clearInterval(timer);
    }
  };

  it('closes a session that says nothing (421 4.4.2)', async () => {
    const idle = await rawSmtp(port);
    expect(await idle.reply()).toEqual(noProgress);
    await idle.closed;
  });

  it('closes a session that drips a command byte by byte, and one that drips its message (421 4.4.2)', async () => {
    const command = await rawSmtp(port);
    await command.command('EHLO client.test');
    expect(await dripping(command, () => 'N')).toEqual(noProgress);
    await command.closed;

    const message = await atData();
    message.write('From: dev@any.test\r\nSubject: drip\r\n\r\n');
    expect(await dripping(message, () => 'x')).toEqual(noProgress);
    await message.closed;
  });

  it('keeps a session that makes progress past the time-out, until the session’s own limit (421 4.4.2)', async () => {
    // A message sent 1 KB at a time is progress: it is taken.
    const c = await atData();
    c.write('From: dev@any.test\r\nTo: delivered@simulator.postline.dev\r\nSubject: slow but steady\r\n\r\n');
    const line = `${'x'.repeat(510)}\r\n`;
    let chunks = 0;
    const timer = setInterval(() => {
      c.write(line + line);
      // 24 chunks of 1 KB, 200 ms apart: the message takes longer than the time-out.
      if (++chunks === 24) {
        clearInterval(timer);
        c.write('.\r\n');
      }
    }, 200);
    const accepted = await c.reply();
    clearInterval(timer);
    expect(accepted.text).toMatch(/^2\.0\.0 Ok: queued as em_/);
    // Commands are progress too: a NOOP every 200 ms keeps the session until SMTP_SESSION_TIMEOUT_MS.
    let reply = { code: 250, text: '' };
    while (reply.code === 250) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      reply = await c.command('NOOP');
    }
    expect(reply).toEqual({ code: 421, text: `4.4.2 ${REPLIES.sessionTooLong[2]}` });
    await c.closed;
  });

  it('refuses unknown keys from an address after too many failures (421 4.7.0) until the minute ends, and takes its valid keys meanwhile', async () => {
    /** AUTH with `key` in a session of its own (one session's growing delays would run into the session's own limit). */
    const auth = async (key: string) => {
      const session = await rawSmtp(port);
      await session.command('EHLO client.test');
      const r = await session.command(`AUTH PLAIN ${authPlain(key)}`);
      if (r.code === 421) await session.closed;
      else session.close();
      return [r.code, r.text.slice(0, 5)];
    };
    const replies = [];
    for (let i = 0; i < 4; i++) replies.push(await auth(`pk_live_guess${i}`));
    expect(replies).toEqual([
      [535, '5.7.8'],
      [535, '5.7.8'],
      [535, '5.7.8'],
      [421, '4.7.0'],
    ]);
    // Only failures are limited, as over HTTP: the address's valid key is taken, its unknown keys are not.
    expect((await auth(org.liveKey))[0]).toBe(235);
    expect(await auth('pk_live_guess4')).toEqual([421, '4.7.0']);
    clock.advance(60_000);
    expect(await auth('pk_live_guess5')).toEqual([535, '5.7.8']);
    // Each failure is logged with the client's address, never with what it tried.
    const failures = logged.filter((l) => l.includes('SMTP authentication failed'));
    expect(failures.length).toBe(6);
    expect(failures.every((l) => l.includes('127.0.0.1'))).toBe(true);
    expect(logged.join('')).not.toContain('pk_live_guess');
  });
});

describe('the SMTP relay at its limit of sessions', () => {
  it('answers a connection past SMTP_MAX_SESSIONS 421 4.3.2, and takes one again once a session ends', async () => {
    const capped = await startTestService({
      env: { SMTP_SUBMISSION_PORT: '0', SMTP_MAX_SESSIONS: '2', SMTP_MAX_CONNECTIONS_PER_IP: '10' },
    });
    try {
      const port = capped.postline.smtp!.submissionPort!;
      const open = [await rawSmtp(port), await rawSmtp(port)];
      expect(open.map((c) => c.greeting.code)).toEqual([220, 220]);
      const third = await rawSmtp(port);
      expect(third.greeting).toEqual({ code: 421, text: `4.3.2 ${REPLIES.tooManySessions[2]}` });
      await third.closed;
      open[0].close();
      await open[0].closed;
      let next = await rawSmtp(port);
      while (next.greeting.code !== 220) {
        // The server hears of the close a moment after the client.
        await next.closed;
        next = await rawSmtp(port);
      }
      expect((await next.command('EHLO client.test')).code).toBe(250);
      for (const c of [open[1], next]) c.close();
    } finally {
      await capped.close();
    }
  });
});

describe('the SMTP relay while the database is away', () => {
  it('answers 451 4.3.0, accepts nothing half, and takes the same message once the database is back', async () => {
    const away = await startTestService({
      env: { SMTP_SUBMISSION_PORT: '0', SMTP_ALLOW_INSECURE_AUTH: 'true', REDIS_URL: '' },
    });
    const org = await away.createOrg('pro');
    const name = new URL(away.postline.services.config.DATABASE_URL!).pathname.slice(1);
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    const allow = (yes: boolean) => admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS ${yes}`);
    const message =
      'From: dev@any.test\r\nTo: delivered@simulator.postline.dev\r\nSubject: outage\r\n\r\nhi\r\n.\r\n';
    const transaction = async (c: Awaited<ReturnType<typeof rawSmtp>>) => {
      const mail = await c.command('MAIL FROM:<dev@any.test>');
      if (mail.code !== 250) return mail;
      await c.command('RCPT TO:<delivered@simulator.postline.dev>');
      await c.command('DATA');
      c.write(message);
      return c.reply();
    };
    try {
      const c = await rawSmtp(away.postline.smtp!.submissionPort!);
      await c.command('EHLO client.test');
      expect((await c.command(`AUTH PLAIN ${authPlain(org.testKey)}`)).code).toBe(235);
      await allow(false);
      await admin.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [name],
      );
      const refused = await transaction(c);
      expect([refused.code, refused.text]).toEqual([
        451,
        '4.3.0 Temporary failure: the message was not stored; send it again',
      ]);
      // A key that cannot be looked up is a temporary failure of AUTH too: the client tries again.
      const late = await rawSmtp(away.postline.smtp!.submissionPort!);
      await late.command('EHLO client.test');
      expect(await late.command(`AUTH PLAIN ${authPlain(org.liveKey)}`)).toEqual({
        code: 454,
        text: `4.7.0 ${REPLIES.authUnavailable[2]}`,
      });
      late.close();
      await c.command('RSET');
      await allow(true);
      let accepted = { code: 0, text: '' };
      for (const end = Date.now() + PATIENCE_MS; accepted.code !== 250 && Date.now() < end; ) {
        accepted = await transaction(c);
        if (accepted.code !== 250) {
          expect(accepted.code).toBe(451); // the pool is still reconnecting
          await c.command('RSET');
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      expect(accepted.text).toMatch(/^2\.0\.0 Ok: queued as em_/);
      // 250 is said once the events are committed; the read model follows.
      const id = /em_[0-9a-z]+/.exec(accepted.text)![0];
      await until(id, 'queued', org.test);
      const list = await org.test.get('/v1/emails');
      expect(list.body.data.map((e: any) => e.id)).toEqual([id]);
      c.close();
    } finally {
      await allow(true);
      await admin.end();
      await away.close();
    }
  });
});
