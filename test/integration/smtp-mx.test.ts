import { beforeAll, describe, expect, it } from 'vitest';
import { REPLIES } from '../../smtp/replies.ts';
import {
  arfComplaint,
  eximTextBounce,
  gmailDsn,
  microsoftNdr,
  type Original,
  postfixDsn,
} from '../fixtures/reports.ts';
import { addVerifiedDomain } from '../support/domains.ts';
import { mxClient } from '../support/inbound.ts';
import { useLiveService } from '../support/live-service.ts';
import { PATIENCE, PATIENCE_MS } from '../support/patience.ts';
import { rawSmtp } from '../support/raw-smtp.ts';
import { startTestService, type TestOrg } from '../support/service.ts';

/**
 * The MX as `npm start` runs it: live emails go out through the MTA to a real SMTP server, and what comes back
 * to their return paths (bounces in the formats real servers use, ARF complaints) is read and recorded.
 */

let acme: TestOrg;
let mxPort: number;
const live = useLiveService({ env: { SMTP_MX_PORT: '0' } });
const { svc } = live;
beforeAll(async () => {
  mxPort = svc.postline.smtp!.mxPort!;
  acme = await svc.createOrg('pro');
  await addVerifiedDomain(acme.live, live.dns, 'acme-mx.test');
  await live.receiver.subscribe(acme.live, ['email.bounced', 'email.complained']);
});

async function until(id: string, check: (email: any) => boolean) {
  for (const end = Date.now() + PATIENCE_MS; Date.now() < end; ) {
    const email = (await acme.live.get(`/v1/emails/${id}`)).body;
    if (check(email)) return email;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`email ${id} never got there`);
}

/** A live email to `to`, delivered; what its return path and headers are. */
async function delivered(to: string): Promise<Original & { id: string }> {
  const sent = await acme.live.post('/v1/emails', {
    from: 'Acme <news@acme-mx.test>',
    to: [to],
    subject: 'Hello',
    text: 'Hi',
  });
  expect(sent.status).toBe(200);
  const id = sent.body.id;
  await until(id, (e) => e.status === 'delivered');
  return {
    id,
    from: 'Acme <news@acme-mx.test>',
    to,
    subject: 'Hello',
    messageId: `<${id}@acme-mx.test>`,
    returnPath: `b+${id}@bounces.acme-mx.test`,
  };
}

/** What a remote server does: a null sender, to `to`, through the MX. */
const report = (to: string, raw: string) =>
  mxClient(mxPort).sendMail({ envelope: { from: '', to: [to] }, raw });

/** Read models and webhooks follow the MX's 250 by a moment: waited for. */
const POLL = PATIENCE;

const suppression = async (email: string) =>
  (await acme.live.get('/v1/suppressions?limit=100')).body.data.find((s: any) => s.email === email);

describe('bounces that come back', () => {
  it.each([
    ['Postfix', postfixDsn],
    ['Gmail', gmailDsn],
    ['Exim (plain text)', eximTextBounce],
    ['Microsoft Exchange Online', microsoftNdr],
  ])(
    'a %s DSN to the return path bounces a delivered recipient, suppresses it, and fires email.bounced',
    async (_, dsn) => {
      const to = `gone-${Math.random().toString(36).slice(2, 8)}@rcpt.test`;
      const original = await delivered(to);
      const info = await report(original.returnPath, dsn(original));
      expect(info.response).toBe('250 2.0.0 Ok: received');
      const email = await until(original.id, (e) => e.status === 'bounced');
      expect(email.recipients[0]).toMatchObject({ email: to, status: 'bounced', smtp_code: 550 });
      // The suppression's read model follows its event.
      await expect
        .poll(() => suppression(to), POLL)
        .toMatchObject({ reason: 'hard_bounce', source_email_id: original.id });
      const events = (await acme.live.get(`/v1/emails/${original.id}/events`)).body.data;
      expect(events.at(-1)).toMatchObject({
        type: 'email.bounced',
        recipient: to,
        data: { bounce_type: 'hard', smtp_code: 550 },
      });
      const log = await svc.postline.services.store.readStream(`email-${original.id}`);
      expect(log.at(-1)).toMatchObject({ type: 'EmailBounced', metadata: { actor: 'mx' } });
      await expect
        .poll(() => live.receiver.ofType('email.bounced').map((r) => r.payload.data.email_id), POLL)
        .toContain(original.id);
    },
  );

  it.each([
    [
      'a block',
      'Action: failed',
      '5.7.1',
      '550 5.7.1 Service unavailable, Client host [192.0.2.1] blocked using Spamhaus.',
      'spam_or_reputation_block',
    ],
    [
      'a policy worded "Recipient address rejected"',
      'Action: failed',
      '5.7.1',
      '554 5.7.1 <x@rcpt.test>: Recipient address rejected: Access denied',
      'spam_or_reputation_block',
    ],
    [
      'a refusal of our return path',
      'Action: failed',
      '5.1.8',
      '550 5.1.8 <b@bounces.test>: Sender address rejected: Domain not found',
      'protocol_error',
    ],
    [
      'a queue that gave up (failed, 4.x.x)',
      'Action: failed',
      '4.2.2',
      '452 4.2.2 Mailbox full',
      'mailbox_full',
    ],
  ])(
    'a DSN reporting %s bounces the recipient softly with its class, never suppressed',
    async (_, action, status, reply, classification) => {
      const to = `blocked-${Math.random().toString(36).slice(2, 8)}@rcpt.test`;
      const original = await delivered(to);
      const dsn = postfixDsn(original, status, reply).replace('Action: failed', action);
      expect((await report(original.returnPath, dsn)).response).toBe('250 2.0.0 Ok: received');
      const email = await until(original.id, (e) => e.status === 'bounced');
      expect(email.recipients[0]).toMatchObject({
        email: to,
        status: 'bounced',
        bounce_type: 'soft',
        classification,
      });
      await expect
        .poll(
          () =>
            live.receiver
              .ofType('email.bounced')
              .filter((r) => r.payload.data.email_id === original.id)
              .map((r) => r.payload.data.bounce),
          POLL,
        )
        .toEqual([expect.objectContaining({ type: 'soft', classification })]);
      expect(await suppression(to)).toBeUndefined();
    },
  );

  it('records nothing for an out-of-office auto-reply to the return path (RFC 3834), and keeps it', async () => {
    const to = `away-${Math.random().toString(36).slice(2, 8)}@rcpt.test`;
    const original = await delivered(to);
    const ooo = [
      `From: Away <${to}>`,
      `To: ${original.returnPath}`,
      'Subject: Automatic reply: Hello',
      'Auto-Submitted: auto-replied',
      'Content-Type: text/plain',
      '',
      'I am out of the office, returning 5.1.26. For urgent matters call the desk.',
      '',
    ].join('\r\n');
    // The 250 comes after whatever the report records is committed.
    expect((await report(original.returnPath, ooo)).response).toBe('250 2.0.0 Ok: received');
    const log = await svc.postline.services.store.readStream(`email-${original.id}`);
    expect(log.filter((e) => e.metadata.actor === 'mx')).toEqual([]);
    expect((await acme.live.get(`/v1/emails/${original.id}`)).body.recipients[0].status).toBe('delivered');
    expect(await suppression(to)).toBeUndefined();
  });

  it.each([['delayed', '4.4.7']])(
    'takes a transient status (Action: %s, %s) as a delay: email.delivery_delayed, the recipient stays delivered',
    async (action, status) => {
      const hook = await live.receiver.subscribe(acme.live, ['email.delivery_delayed']);
      const to = `slow-${Math.random().toString(36).slice(2, 8)}@rcpt.test`;
      const original = await delivered(to);
      const dsn = postfixDsn(original, status, `452 ${status} Mailbox full`).replace(
        'Action: failed',
        `Action: ${action}`,
      );
      expect((await report(original.returnPath, dsn)).response).toBe('250 2.0.0 Ok: received');
      await expect
        .poll(
          () =>
            live.receiver
              .ofType('email.delivery_delayed')
              .map((r) => [r.payload.data.email_id, r.payload.data.recipient]),
          POLL,
        )
        .toContainEqual([original.id, to]);
      const events = (await acme.live.get(`/v1/emails/${original.id}/events`)).body.data;
      expect(events.at(-1)).toMatchObject({
        type: 'email.delivery_delayed',
        recipient: to,
        data: { source: 'report', smtp_code: 452 },
      });
      const log = await svc.postline.services.store.readStream(`email-${original.id}`);
      expect(log.at(-1)).toMatchObject({ type: 'EmailDelayReported', metadata: { actor: 'mx' } });
      expect((await acme.live.get(`/v1/emails/${original.id}`)).body.recipients[0].status).toBe('delivered');
      expect(await suppression(to)).toBeUndefined();
      await acme.live.delete(`/v1/webhooks/${hook.id}`);
    },
  );
});

describe('complaints that come back', () => {
  it.each([
    ['the return path', (o: Original) => o.returnPath],
    ['the feedback address', () => 'fbl@mx.postline.test'],
  ])(
    'an ARF report to %s marks the recipient complained, suppresses it, and fires email.complained',
    async (_, to) => {
      const recipient = `angry-${Math.random().toString(36).slice(2, 8)}@rcpt.test`;
      const original = await delivered(recipient);
      const info = await report(to(original), arfComplaint(original, to(original)));
      expect(info.response).toBe('250 2.0.0 Ok: received');
      await until(original.id, (e) => e.recipients[0].status === 'complained');
      await expect
        .poll(() => suppression(recipient), POLL)
        .toMatchObject({ reason: 'complaint', source_email_id: original.id });
      await expect
        .poll(() => live.receiver.ofType('email.complained').map((r) => r.payload.data.email_id), POLL)
        .toContain(original.id);
    },
  );

  it('an ARF report without Original-Rcpt-To names the recipient by the quoted To, display name and all', async () => {
    const recipient = `named-${Math.random().toString(36).slice(2, 8)}@rcpt.test`;
    const original = await delivered(recipient);
    const arf = arfComplaint({ ...original, to: `"Smith, Bob" <${recipient}>` }, original.returnPath).replace(
      /Original-Rcpt-To: .*\r\n/,
      '',
    );
    expect((await report(original.returnPath, arf)).response).toBe('250 2.0.0 Ok: received');
    await until(original.id, (e) => e.recipients[0].status === 'complained');
    await expect.poll(() => suppression(recipient), POLL).toMatchObject({ reason: 'complaint' });
  });

  it('keeps a report that matches no email, answering 250 all the same', async () => {
    const stray: Original = {
      from: 'x@elsewhere.test',
      to: 'y@rcpt.test',
      subject: 'not ours',
      messageId: '<not-ours@elsewhere.test>',
      returnPath: 'bounce@elsewhere.test',
    };
    const info = await report('fbl@mx.postline.test', arfComplaint(stray, 'fbl@mx.postline.test'));
    expect(info.response).toBe('250 2.0.0 Ok: received');
  });
});

describe('the MX refuses', () => {
  it('foreign domains, unknown return paths and test-mode emails, and offers no AUTH', async () => {
    const c = await rawSmtp(mxPort);
    expect(c.greeting).toEqual({ code: 220, text: expect.stringMatching(/^\S+ ESMTP Postline$/) });
    const ehlo = await c.command('EHLO remote.test');
    expect(ehlo.text).toContain('STARTTLS');
    expect(ehlo.text).not.toContain('AUTH');
    // RFC 2034: announced, and each reply carries one enhanced code, smtp-server's own ones as the catalogue's.
    expect(ehlo.text).toContain('ENHANCEDSTATUSCODES');
    expect(await c.command('MAIL FROM:<>')).toEqual({ code: 250, text: expect.stringMatching(/^2\.1\.0 /) });
    const foreign = await c.command('RCPT TO:<someone@gmail.com>');
    expect([foreign.code, foreign.text]).toEqual([550, `5.7.1 ${REPLIES.relayDenied[2]}`]);
    const own = await c.command('RCPT TO:<news@acme-mx.test>');
    expect([own.code, own.text.slice(0, 5)]).toEqual([550, '5.7.1']);
    const unknown = await c.command('RCPT TO:<b+em_01aaaaaaaaaaaaaaaaaaaaaaaa@bounces.acme-mx.test>');
    expect([unknown.code, unknown.text.slice(0, 5)]).toEqual([550, '5.1.1']);

    const test = await acme.test.post('/v1/emails', {
      from: 'dev@acme-mx.test',
      to: ['delivered@simulator.postline.dev'],
      subject: 's',
      text: 't',
    });
    const testMode = await c.command(`RCPT TO:<b+${test.body.id}@bounces.acme-mx.test>`);
    expect([testMode.code, testMode.text.slice(0, 5)]).toEqual([550, '5.1.1']);
    const data = await c.command('DATA');
    expect(data.code).toBe(503); // no valid recipient: no message
    c.close();
  });
});

describe('the MX’s MAIL and RCPT parameters', () => {
  it('takes those of the extensions it announces and refuses any other with 555 5.5.4', async () => {
    const c = await rawSmtp(mxPort);
    await c.command('EHLO remote.test');
    const unknown = await c.command('MAIL FROM:<ann@remote.test> FOO=bar');
    expect(unknown).toEqual({
      code: 555,
      text: '5.5.4 Unsupported parameter FOO: MAIL FROM takes only SIZE, BODY, SMTPUTF8 here',
    });
    // Delivery notifications are not offered: RET is refused, not ignored.
    expect((await c.command('MAIL FROM:<ann@remote.test> RET=HDRS')).code).toBe(555);
    const taken = await c.command('MAIL FROM:<ann@remote.test> SIZE=100 BODY=8BITMIME SMTPUTF8');
    expect(taken.code).toBe(250);
    const notify = await c.command('RCPT TO:<support@acme-mx.test> NOTIFY=NEVER');
    expect(notify).toEqual({
      code: 555,
      text: '5.5.4 Unsupported parameter NOTIFY: RCPT TO takes no parameters here',
    });
    c.close();
  });
});

describe('the MX’s time-outs', () => {
  it('closes a session that drips bytes, however steadily, once it makes no progress (421 4.4.2)', async () => {
    const mx = await startTestService({ env: { SMTP_MX_PORT: '0', SMTP_IDLE_TIMEOUT_MS: '1000' } });
    try {
      const c = await rawSmtp(mx.postline.smtp!.mxPort!);
      expect((await c.command('EHLO remote.test')).code).toBe(250);
      // A byte every 100 ms keeps the socket busy but never completes a command.
      const timer = setInterval(() => c.write('N'), 100);
      const reply = await c.reply().finally(() => clearInterval(timer));
      expect(reply).toEqual({ code: 421, text: `4.4.2 ${REPLIES.idleTimeout[2]}` });
      await c.closed;
    } finally {
      await mx.close();
    }
  });
});
