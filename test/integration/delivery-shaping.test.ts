import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { suppressionStream } from '../../domain/suppressions/suppression.events.ts';
import { ManualClock } from '../../platform/clock.ts';
import { registry } from '../../platform/metrics.ts';
import { DeliveryProcess } from '../../processes/delivery/delivery.process.ts';
import { OutboundMta } from '../../processes/delivery/mta/outbound.ts';
import { ConnectionSlots } from '../../processes/delivery/shaping/connection-slots.ts';
import { SuppressionPolicyProcess } from '../../processes/suppression-policy/suppression-policy.process.ts';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain } from '../support/domains.ts';
import { readEmail } from '../support/emails.ts';
import { PATIENCE } from '../support/patience.ts';
import type { TestOrg } from '../support/service.ts';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts';

/**
 * What a provider's refusal does to its destination's shaping group in the delivery look (one DeliveryProcess, a
 * ManualClock, the real SMTP sink): a block halves the group's rates and suppresses nobody, a user unknown
 * suppresses and leaves the group alone, a `421 4.7.28` backs the group off (or pauses Google's, by its reply
 * rule) so that its next job is not even claimed while another destination's mail goes out. The classes of the
 * replies themselves are held in emails-delivery.test.ts and the corpus test.
 */
let mx: SmtpSink;
let acme: TestOrg;
let delivery: DeliveryProcess;
let policy: SuppressionPolicyProcess;
const clock = new ManualClock('2026-07-01T09:00:00Z');
const MINUTE = 60_000;

beforeAll(async () => {
  mx = await startSmtpSink();
});
const { svc, dns } = useDnsService(() => ({ clock, env: { OUTBOUND_SMTP_PORT: String(mx.port) } }));
/** A recipient domain of its own per test (its own group, `mx:mx.<domain>`), its MX on the loopback sink. */
const destination = (domain: string, mxHost = `mx.${domain}`) => {
  dns.set(domain, 'MX', [{ exchange: mxHost, priority: 10 }]);
  dns.set(mxHost, 'A', ['127.0.0.1']);
  return domain;
};
beforeAll(async () => {
  acme = await svc.createOrg('pro');
  await addVerifiedDomain(acme.live, dns, 'acme-shaping.test');
  delivery = new DeliveryProcess(svc.postline.services);
  policy = new SuppressionPolicyProcess(svc.postline.services);
});
afterAll(async () => {
  await delivery?.stop();
  await policy?.stop();
  await mx?.close();
});
beforeEach(() => mx.reset());

const db = () => svc.postline.services.db;
const send = async (to: string) => {
  const r = await acme.live.post('/v1/emails', {
    from: 'Acme <news@acme-shaping.test>',
    subject: 'Hello',
    text: 'Hi',
    to,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.id as string;
};
const recipientOf = async (id: string) => (await readEmail(svc, acme.live, id)).recipients[0];
const groupRow = async (grp: string) =>
  (
    await db().query(
      'SELECT rate_factor, backoff_level, held_until, held_reason FROM shaping_groups WHERE grp = $1',
      [grp],
    )
  ).rows[0];
/** The address's suppression events, its stream being the truth (the policy process has run). */
const suppressionEvents = async (address: string) =>
  (await svc.postline.services.store.readStream(suppressionStream(acme.orgId, 'live', address))).map(
    (e) => e.type,
  );
const bounces = async (classification: string) => {
  const text = await registry.getSingleMetricAsString('postline_bounces_total');
  const line = text.split('\n').find((l) => l.includes(`classification="${classification}"`));
  return Number(line?.split(' ').at(-1) ?? 0);
};
const inMs = (ms: number) => new Date(clock.now().getTime() + ms);

describe('a refusal in the delivery look, and its shaping group', () => {
  it.each([
    [
      'spamhaus',
      '5.7.1 Service unavailable, Client host [127.0.0.1] blocked using Spamhaus.',
      'spam_or_reputation_block',
    ],
    ['ms606', '5.7.606 Access denied, banned sending IP [127.0.0.1].', 'spam_or_reputation_block'],
    [
      'gm726',
      '5.7.26 This mail is unauthenticated, which poses a security risk to the sender and Gmail users.',
      'authentication_failure',
    ],
  ] as const)(
    'given a %s block: a soft bounce of its class, nobody suppressed, the group at half rate',
    async (name, reply, cls) => {
      // Given
      const domain = destination(`${name}.test`);
      mx.scriptRecipient(`ann@${domain}`, { code: 550, message: reply }, 'always');
      const before = await bounces(cls);
      // When
      const id = await send(`ann@${domain}`);
      await delivery.runOnce();
      await policy.runOnce();
      // Then
      expect(await recipientOf(id)).toMatchObject({
        status: 'bounced',
        bounce_type: 'soft',
        classification: cls,
      });
      expect(await suppressionEvents(`ann@${domain}`)).toEqual([]);
      expect(await groupRow(`mx:mx.${domain}`)).toMatchObject({ rate_factor: 0.5, held_until: null });
      expect(await bounces(cls)).toBe(before + 1);
    },
  );

  it('given a user unknown: a hard bounce, suppressed, the group untouched', async () => {
    const domain = destination('unknown-user.test');
    mx.scriptRecipient(
      `gone@${domain}`,
      { code: 550, message: '5.1.1 The email account does not exist' },
      'always',
    );
    const before = await bounces('invalid_recipient');
    const id = await send(`gone@${domain}`);
    await delivery.runOnce();
    await policy.runOnce();
    expect(await recipientOf(id)).toMatchObject({
      status: 'bounced',
      bounce_type: 'hard',
      classification: 'invalid_recipient',
    });
    expect(await suppressionEvents(`gone@${domain}`)).toEqual(['SuppressionAdded']);
    expect(await groupRow(`mx:mx.${domain}`)).toBeUndefined();
    expect(await bounces('invalid_recipient')).toBe(before + 1);
  });

  it('given 421 4.7.28: the group backs off a minute, its next job is not claimed while another destination flows', async () => {
    // Given: a destination that answered 421 4.7.28
    const domain = destination('throttled.test');
    const other = destination('flowing.test');
    mx.scriptRecipient(`a@${domain}`, { code: 421, message: '4.7.28 rate limited, slow down' });
    const first = await send(`a@${domain}`);
    await delivery.runOnce();
    expect(await recipientOf(first)).toMatchObject({ status: 'delayed', smtp_code: 421 });
    expect(await groupRow(`mx:mx.${domain}`)).toMatchObject({ backoff_level: 1, held_until: inMs(MINUTE) });
    // The destination's group is known to the claim once the queue view's replies are written (once a second).
    await expect
      .poll(
        async () =>
          (await db().query('SELECT grp FROM delivery_destinations WHERE destination = $1', [domain])).rows[0]
            ?.grp,
        PATIENCE,
      )
      .toBe(`mx:mx.${domain}`);

    // When: mail to it and to another destination
    const held = await send(`b@${domain}`);
    const flowing = await send(`c@${other}`);
    await delivery.runOnce();

    // Then: the other destination's mail went out; the held one's job was not claimed, nothing was attempted
    expect(mx.rcptLog.map((r) => r.recipient)).toEqual([`a@${domain}`, `c@${other}`]);
    expect((await recipientOf(flowing)).status).toBe('delivered');
    expect((await recipientOf(held)).status).toBe('pending');
    const job = await db().query('SELECT claimed_until, due_at FROM delivery_jobs WHERE email_id = $1', [
      held,
    ]);
    expect(job.rows).toEqual([{ claimed_until: null, due_at: expect.any(Date) }]);
    expect(job.rows[0].due_at.getTime()).toBeLessThanOrEqual(clock.now().getTime());

    // And: once the back-off has run out, it goes
    clock.advance(MINUTE);
    await delivery.runOnce();
    expect((await recipientOf(held)).status).toBe('delivered');
    expect((await groupRow(`mx:mx.${domain}`)).backoff_level).toBe(0);
  });

  it('given every connection slot of the group held elsewhere: delayed, no attempt counted, nothing sent, the group untouched; then sent', async () => {
    // Given: another process holds the group's 5 connection slots (the default group's); an MTA that waits for
    // one 1 s at most
    const domain = destination('busy-slots.test');
    const group = `mx:mx.${domain}`;
    const elsewhere = new ConnectionSlots(svc.postline.services);
    const held = await Promise.all([0, 1, 2, 3, 4].map(() => elsewhere.acquire(group, 5)));
    expect(held.every((h) => h !== null)).toBe(true);
    const mta = new OutboundMta({
      dnsServers: [dns.serverAddress],
      port: mx.port,
      log: svc.postline.services.log,
      timeoutMs: 1_000,
      connectionSlots: new ConnectionSlots(svc.postline.services),
    });
    const waiting = new DeliveryProcess(svc.postline.services, { mta });
    try {
      // When
      const id = await send(`ann@${domain}`);
      await waiting.runOnce();
      // Then: delayed a minute as no attempt, the email not sent, nothing connected, the group as it was
      expect(await recipientOf(id)).toMatchObject({ status: 'delayed', attempts: 0, smtp_code: null });
      const history = await svc.postline.services.store.readStream(`email-${id}`);
      expect(history.map((e) => e.type)).toEqual([
        'EmailQueued',
        'EmailSendingStarted',
        'EmailDeliveryAttemptStarted',
        'EmailDeliveryDelayed',
      ]);
      expect(history.at(-1)?.data).toMatchObject({ attempt: 0, attempted: false });
      const events = (await acme.live.get(`/v1/emails/${id}/events`)).body.data;
      expect(events.find((e: any) => e.type === 'email.delivery_delayed')?.data).toMatchObject({
        source: 'attempt',
        attempt: null,
      });
      expect(mx.connections.total).toBe(0);
      expect(await groupRow(group)).toBeUndefined();
      // And: once a slot is free and the minute is over, it goes as its first attempt
      for (const h of held) await h?.release();
      clock.advance(2 * MINUTE);
      await waiting.runOnce();
      expect(await recipientOf(id)).toMatchObject({ status: 'delivered', attempts: 1 });
      // The destination's log (written on stop) has the server's one reply; the wait was none.
      await waiting.stop();
      const replies = await svc.postline.services.db.query(
        'SELECT smtp_code FROM delivery_replies WHERE destination = $1',
        [domain],
      );
      expect(replies.rows).toEqual([{ smtp_code: 250 }]);
    } finally {
      await waiting.stop();
      await mta.close();
      elsewhere.close();
    }
  });

  it("given Google's 421 4.7.28: its reply rule pauses the group google for 15 minutes", async () => {
    const domain = destination('workspace.test', 'aspmx.l.google.com');
    mx.scriptRecipient(`d@${domain}`, {
      code: 421,
      message:
        '4.7.28 Gmail has detected an unusual rate of unsolicited mail originating from your IP address.',
    });
    const id = await send(`d@${domain}`);
    await delivery.runOnce();
    expect(await recipientOf(id)).toMatchObject({ status: 'delayed', smtp_code: 421 });
    const google = await groupRow('google');
    expect(google).toMatchObject({ held_until: inMs(15 * MINUTE), backoff_level: 0 });
    expect(google.held_reason).toMatch(/^paused by a reply rule: 421 4\.7\.28/);
    await policy.runOnce();
    expect(await suppressionEvents(`d@${domain}`)).toEqual([]);
  });
});
