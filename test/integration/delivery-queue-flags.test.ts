import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { DeliveryProcess } from '../../processes/delivery/delivery.process.ts';
import { SuppressionPolicyProcess } from '../../processes/suppression-policy/suppression-policy.process.ts';
import { startDeliveryAttempt, systemMeta, withdrawEmail } from '../../write-side/emails/email.commands.ts';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain, recipientDomainOnLoopback } from '../support/domains.ts';
import { emailHistory, readEmail } from '../support/emails.ts';
import type { TestOrg } from '../support/service.ts';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts';

/**
 * What the delivery look does with the queue's controls as they stand in its tables: a paused destination is not
 * claimed (the others are), a pause ends on its own, `expedite` sends delayed recipients before their retry time,
 * `give_up` bounces the destination's waiting recipients softly, one whose attempt a crash cut short included. The controls' events and commands that set them
 * are tested with the queue's commands.
 */
let mx: SmtpSink;
let acme: TestOrg;
let delivery: DeliveryProcess;
let policy: SuppressionPolicyProcess;
const clock = new ManualClock('2026-07-01T09:00:00Z');

beforeAll(async () => {
  mx = await startSmtpSink();
});
const { svc, dns } = useDnsService(() => ({ clock, env: { OUTBOUND_SMTP_PORT: String(mx.port) } }));
beforeAll(async () => {
  recipientDomainOnLoopback(dns, ['paused.test', 'open.test', 'dead.test']);
  acme = await svc.createOrg('pro');
  await addVerifiedDomain(acme.live, dns, 'acme-flags.test');
  delivery = new DeliveryProcess(svc.postline.services);
  policy = new SuppressionPolicyProcess(svc.postline.services);
});
afterAll(async () => {
  await delivery?.stop();
  await policy?.stop();
  await mx?.close();
});
beforeEach(async () => {
  mx.reset();
  await svc.postline.services.db.query('DELETE FROM delivery_pauses');
});

const send = async (to: string[]) => {
  const r = await acme.live.post('/v1/emails', {
    from: 'Acme <news@acme-flags.test>',
    subject: 'Hello',
    text: 'Hi',
    to,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.id as string;
};
const db = () => svc.postline.services.db;
const recipient = async (id: string, address: string) =>
  (await readEmail(svc, acme.live, id)).recipients.find((r: { email: string }) => r.email === address);
const pause = (destination: string, orgId: string, until: Date) =>
  db().query(
    `INSERT INTO delivery_pauses (org_id, destination, until, reason, paused_by) VALUES ($1, $2, $3, 'test', 'test')`,
    [orgId, destination, until],
  );

describe('the queue controls in the delivery look', () => {
  it.each([
    ['its organization', () => acme.orgId],
    ['every organization', () => ''],
  ])('a destination paused for %s waits, the others flow, and the pause ends on its own', async (_, org) => {
    await pause('paused.test', org(), new Date(clock.now().getTime() + 3600_000));
    const id = await send(['a@paused.test', 'b@open.test']);
    await delivery.runOnce();
    expect(mx.messages.flatMap((m) => m.rcptTo)).toEqual(['b@open.test']);
    expect((await recipient(id, 'a@paused.test')).status).toBe('pending');
    const { rows } = await db().query(`SELECT claimed_until FROM delivery_jobs WHERE email_id = $1`, [id]);
    expect(rows).toEqual([{ claimed_until: null }]);

    clock.advance(3600_001);
    await delivery.runOnce();
    expect(mx.messages.flatMap((m) => m.rcptTo).sort()).toEqual(['a@paused.test', 'b@open.test']);
    expect((await recipient(id, 'a@paused.test')).status).toBe('delivered');
  });

  it('expedite: a delayed recipient goes before its retry time, recorded as an early attempt', async () => {
    mx.scriptRecipient('late@open.test', { code: 451, message: '4.3.0 try again later' });
    const id = await send(['late@open.test']);
    await delivery.runOnce();
    const delayed = await recipient(id, 'late@open.test');
    expect(delayed.status).toBe('delayed');
    expect(Date.parse(delayed.next_attempt_at)).toBeGreaterThan(clock.now().getTime());
    // Not due yet: a run sends nothing.
    await delivery.runOnce();
    expect(mx.rcptLog.filter((r) => r.recipient === 'late@open.test')).toHaveLength(1);

    await db().query(
      `UPDATE delivery_jobs SET expedite = true, due_at = $2, claimed_until = NULL WHERE email_id = $1`,
      [id, clock.now()],
    );
    await delivery.runOnce();
    expect(mx.messages.flatMap((m) => m.rcptTo)).toContain('late@open.test');
    expect((await recipient(id, 'late@open.test')).status).toBe('delivered');
    const attempts = (await emailHistory(svc, id)).filter((e) => e.type === 'EmailDeliveryAttemptStarted');
    expect(attempts).toHaveLength(2);
  });

  it('give_up: the waiting recipients bounce softly, with a webhook-visible reason, and are not suppressed', async () => {
    mx.scriptRecipient('stuck@open.test', { code: 451, message: '4.3.0 try again later' }, 'always');
    const id = await send(['stuck@open.test']);
    await delivery.runOnce();
    expect((await recipient(id, 'stuck@open.test')).status).toBe('delayed');

    await db().query(
      `UPDATE delivery_jobs SET give_up = true, due_at = $2, claimed_until = NULL WHERE email_id = $1`,
      [id, clock.now()],
    );
    await delivery.runOnce();
    const bounced = await recipient(id, 'stuck@open.test');
    expect(bounced).toMatchObject({
      status: 'bounced',
      bounce_type: 'soft',
      classification: 'unknown',
      smtp_response: 'local: delivery to open.test was given up by the operator',
    });
    const { rows } = await db().query(`SELECT 1 FROM delivery_jobs WHERE email_id = $1`, [id]);
    expect(rows).toEqual([]);
    await policy.runOnce();
    const suppressed = await acme.live.get('/v1/suppressions');
    expect(suppressed.body.data.map((s: { email: string }) => s.email)).not.toContain('stuck@open.test');
  });

  it('a withdrawn email leaves the queue: its deferred jobs at every destination are removed', async () => {
    mx.scriptRecipient('wait@open.test', { code: 451, message: '4.3.0 try again later' }, 'always');
    mx.scriptRecipient('wait@dead.test', { code: 451, message: '4.3.0 try again later' }, 'always');
    const id = await send(['wait@open.test', 'wait@dead.test']);
    await delivery.runOnce();
    const jobs = async () =>
      (await db().query(`SELECT destination FROM delivery_jobs WHERE email_id = $1 ORDER BY 1`, [id])).rows;
    expect(await jobs()).toEqual([{ destination: 'dead.test' }, { destination: 'open.test' }]);
    const meta = systemMeta({ orgId: acme.orgId, mode: 'live' });
    expect((await withdrawEmail(svc.postline.services, meta, id)).events.map((e) => e.type)).toEqual([
      'EmailCanceled',
    ]);
    await delivery.runOnce();
    expect(await jobs()).toEqual([]);
    expect((await readEmail(svc, acme.live, id)).status).toBe('canceled');
  });

  it('give_up settles a recipient whose attempt a crash cut short: it bounces and the job ends', async () => {
    await pause('dead.test', '', new Date(clock.now().getTime() + 3600_000));
    const id = await send(['cut@dead.test']);
    await delivery.runOnce(); // the job exists, held by the pause
    await db().query('DELETE FROM delivery_pauses');
    // A worker recorded an attempt and died before any outcome.
    const meta = systemMeta({ orgId: acme.orgId, mode: 'live' });
    const endsBy = new Date(clock.now().getTime() + 35_000).toISOString();
    await startDeliveryAttempt(svc.postline.services, meta, id, { recipients: ['cut@dead.test'], endsBy });
    clock.advance(60_000);
    await db().query(
      `UPDATE delivery_jobs SET give_up = true, due_at = $2, claimed_until = NULL WHERE email_id = $1`,
      [id, clock.now()],
    );
    // Another process (this one holds the stream as queued) looks until the job is gone, the attempt's grace
    // running out on the way, a bounded number of times.
    const after = new DeliveryProcess(svc.postline.services);
    const job = async () =>
      (await db().query(`SELECT due_at FROM delivery_jobs WHERE email_id = $1`, [id])).rows;
    try {
      for (let looks = 0; looks < 20 && (await job()).length > 0; looks++) {
        await after.runOnce();
        clock.advance(1_000);
      }
    } finally {
      await after.stop();
    }
    expect(await job()).toEqual([]);
    expect(await recipient(id, 'cut@dead.test')).toMatchObject({
      status: 'bounced',
      bounce_type: 'soft',
      smtp_response: 'local: delivery to dead.test was given up by the operator',
    });
    expect((await emailHistory(svc, id)).map((e) => e.type)).toContain('EmailBounced');
    expect(mx.rcptLog.filter((r) => r.recipient === 'cut@dead.test')).toEqual([]);
  });

  it('keeps each destination reply for the queue view: last response and recent replies', async () => {
    mx.scriptRecipient('later@open.test', { code: 451, message: '4.7.0 slow down please' });
    await send(['later@open.test']);
    await delivery.runOnce();
    await delivery.stop();
    delivery = new DeliveryProcess(svc.postline.services);
    const { rows } = await db().query(
      `SELECT destination, last_code, last_response FROM delivery_destinations WHERE org_id = $1 AND destination = 'open.test'`,
      [acme.orgId],
    );
    expect(rows).toEqual([
      { destination: 'open.test', last_code: 451, last_response: '451 4.7.0 slow down please' },
    ]);
    const replies = await db().query(
      `SELECT smtp_code, response FROM delivery_replies WHERE org_id = $1 AND destination = 'open.test'`,
      [acme.orgId],
    );
    expect(replies.rows).toContainEqual({ smtp_code: 451, response: '451 4.7.0 slow down please' });
  });
});
