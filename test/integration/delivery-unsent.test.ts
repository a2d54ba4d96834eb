import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { DeliveryProcess } from '../../processes/delivery/delivery.process.ts';
import { PUBLIC_TYPE_OF } from '../../processes/webhooks/public-events.v1.ts';
import { startDeliveryAttempt, systemMeta } from '../../write-side/emails/email.commands.ts';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain, recipientDomainOnLoopback } from '../support/domains.ts';
import { emailEventTypes, emailHistory, readEmail } from '../support/emails.ts';
import type { TestOrg } from '../support/service.ts';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts';

/**
 * Outcomes the delivery decides without sending anything (the sending domain is gone, the operator gave the
 * destination up) record no `EmailSent` and leave alone a recipient whose attempt another process has in flight;
 * a give-up decides on the stream as it stands, never on the copy the delivery's consumer noted at acceptance.
 */
let mx: SmtpSink;
let acme: TestOrg;
let delivery: DeliveryProcess;
const clock = new ManualClock('2026-07-01T09:00:00Z');

beforeAll(async () => {
  mx = await startSmtpSink();
});
const { svc, dns } = useDnsService(() => ({ clock, env: { OUTBOUND_SMTP_PORT: String(mx.port) } }));
beforeAll(async () => {
  recipientDomainOnLoopback(dns, ['rcpt-unsent.test', 'busy.test']);
  acme = await svc.createOrg('pro');
  delivery = new DeliveryProcess(svc.postline.services);
});
afterAll(async () => {
  await delivery?.stop();
  await mx?.close();
});
beforeEach(async () => {
  mx.reset();
  await db().query('DELETE FROM delivery_pauses');
});

const db = () => svc.postline.services.db;
const send = async (from: string, to: string[]) => {
  const r = await acme.live.post('/v1/emails', { from, subject: 'Hello', text: 'Hi', to });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.id as string;
};
/** The webhooks a subscriber of every email event would get for the email, in order. */
const webhookTypes = async (id: string) =>
  (await emailHistory(svc, id)).map((e) => PUBLIC_TYPE_OF[e.type]).filter(Boolean);
const giveUp = (id: string) =>
  db().query(
    `UPDATE delivery_jobs SET give_up = true, due_at = $2, claimed_until = NULL WHERE email_id = $1`,
    [id, clock.now()],
  );

describe('an email whose sending domain was deleted before delivery', () => {
  it('is delayed as by a 4xx without EmailSent; once the domain is back, the attempt that sends records it', async () => {
    const domain = await addVerifiedDomain(acme.live, dns, 'acme-gone.test');
    const id = await send('Acme <hi@acme-gone.test>', ['ann@rcpt-unsent.test']);
    expect((await acme.live.delete(`/v1/domains/${domain.id}`)).status).toBe(200);

    await delivery.runOnce();
    expect(await emailEventTypes(svc, id)).toEqual([
      'EmailQueued',
      'EmailSendingStarted',
      'EmailDeliveryDelayed',
    ]);
    expect(await webhookTypes(id)).toEqual(['email.delivery_delayed']);
    const email = await readEmail(svc, acme.live, id);
    expect(email.status).toBe('sending');
    expect(email.recipients[0]).toMatchObject({
      status: 'delayed',
      attempts: 1,
      smtp_response: 'local: sending domain acme-gone.test is no longer available',
    });
    expect(mx.messages).toEqual([]);

    expect((await acme.live.post(`/v1/domains/${domain.id}/restore`)).status).toBe(200);
    clock.advance(61_000);
    await delivery.runOnce();
    expect(mx.messages.flatMap((m) => m.rcptTo)).toEqual(['ann@rcpt-unsent.test']);
    expect((await emailEventTypes(svc, id)).slice(3)).toEqual([
      'EmailDeliveryAttemptStarted',
      'EmailSent',
      'EmailDelivered',
    ]);
    expect((await readEmail(svc, acme.live, id)).status).toBe('delivered');
  });

  it('bounces softly once its retries ran out, without EmailSent: the email is bounced', async () => {
    const domain = await addVerifiedDomain(acme.live, dns, 'acme-gone-for-good.test');
    const id = await send('Acme <hi@acme-gone-for-good.test>', ['bob@rcpt-unsent.test']);
    expect((await acme.live.delete(`/v1/domains/${domain.id}`)).status).toBe(200);
    const job = async () =>
      (await db().query(`SELECT due_at FROM delivery_jobs WHERE email_id = $1`, [id])).rows[0]?.due_at;
    await delivery.runOnce();
    for (let looks = 0; looks < 20; looks++) {
      const due: Date | undefined = await job();
      if (!due) break;
      if (due > clock.now()) clock.advance(due.getTime() - clock.now().getTime());
      await delivery.runOnce();
    }
    expect(await job()).toBeUndefined();
    const types = await emailEventTypes(svc, id);
    expect(types).not.toContain('EmailSent');
    expect(types.at(-1)).toBe('EmailBounced');
    const email = await readEmail(svc, acme.live, id);
    expect(email.status).toBe('bounced');
    expect(email.recipients[0]).toMatchObject({ status: 'bounced', bounce_type: 'soft' });
    expect(email.recipients[0].smtp_response).toMatch(/^gave up after 12 attempts: local: sending domain/);
    expect(await webhookTypes(id)).toEqual([...Array(11).fill('email.delivery_delayed'), 'email.bounced']);
  });
});

describe('a destination given up (`queue bounce`)', () => {
  it('bounces mail that never left without EmailSent: the email is bounced', async () => {
    await addVerifiedDomain(acme.live, dns, 'acme-unsent.test');
    await db().query(
      `INSERT INTO delivery_pauses (org_id, destination, until, reason, paused_by) VALUES ('', 'busy.test', $1, 'test', 'test')`,
      [new Date(clock.now().getTime() + 3600_000)],
    );
    const id = await send('Acme <hi@acme-unsent.test>', ['cal@busy.test']);
    await delivery.runOnce(); // the job, held by the pause
    await giveUp(id);
    await delivery.runOnce();
    expect(await emailEventTypes(svc, id)).toEqual(['EmailQueued', 'EmailSendingStarted', 'EmailBounced']);
    expect(await webhookTypes(id)).toEqual(['email.bounced']);
    expect((await readEmail(svc, acme.live, id)).status).toBe('bounced');
  });

  it('leaves a recipient whose attempt another process has in flight to that attempt, seen from the just-queued copy', async () => {
    await db().query(
      `INSERT INTO delivery_pauses (org_id, destination, until, reason, paused_by) VALUES ('', 'busy.test', $1, 'test', 'test')`,
      [new Date(clock.now().getTime() + 3600_000)],
    );
    const id = await send('Acme <hi@acme-unsent.test>', ['dan@busy.test']);
    // This process's consumer notes the email as queued (its stream at acceptance) and makes its job, which the
    // pause holds: the look has not come yet.
    await delivery.runOnce();
    await db().query('DELETE FROM delivery_pauses');
    // Another process records an attempt and is sending now, within its window.
    const meta = systemMeta({ orgId: acme.orgId, mode: 'live' });
    const endsBy = new Date(clock.now().getTime() + 35_000).toISOString();
    await startDeliveryAttempt(svc.postline.services, meta, id, { recipients: ['dan@busy.test'], endsBy });
    await giveUp(id);

    await delivery.runOnce();
    expect(await emailEventTypes(svc, id)).toEqual([
      'EmailQueued',
      'EmailSendingStarted',
      'EmailDeliveryAttemptStarted',
    ]);
    const { rows } = await db().query(`SELECT due_at FROM delivery_jobs WHERE email_id = $1`, [id]);
    expect(rows).toEqual([{ due_at: new Date(endsBy) }]);

    // The attempt never got an outcome (its process died): past its end and the grace, it is given up.
    for (let looks = 0; looks < 20; looks++) {
      clock.advance(1_000 + Math.max(0, Date.parse(endsBy) - clock.now().getTime()));
      await delivery.runOnce();
      if ((await emailEventTypes(svc, id)).includes('EmailBounced')) break;
    }
    expect((await readEmail(svc, acme.live, id)).recipients[0]).toMatchObject({
      status: 'bounced',
      smtp_response: 'local: delivery to busy.test was given up by the operator',
    });
    expect(mx.rcptLog.filter((r) => r.recipient === 'dan@busy.test')).toEqual([]);
  });
});
