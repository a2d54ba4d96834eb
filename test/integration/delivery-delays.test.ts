import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { DeliveryProcess } from '../../processes/delivery/delivery.process.ts';
import { publicData, summaryOf } from '../../processes/webhooks/public-events.v1.ts';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain, recipientDomainOnLoopback } from '../support/domains.ts';
import { emailHistory } from '../support/emails.ts';
import type { TestOrg } from '../support/service.ts';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts';

/**
 * A recipient a server deferred carries the class of that reply, as a bounced one does: in its
 * `EmailDeliveryDelayed`, in the `email.delivery_delayed` webhook (`delay.classification`), in the email's
 * history and recipients as the API shows them, and as the destination's last class in the queue view.
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
  recipientDomainOnLoopback(dns, ['slow.test']);
  acme = await svc.createOrg('pro');
  await addVerifiedDomain(acme.live, dns, 'acme-delays.test');
  delivery = new DeliveryProcess(svc.postline.services);
});
afterAll(async () => {
  await delivery?.stop();
  await mx?.close();
});

describe('a deferral', () => {
  it.each([
    ['full@slow.test', { code: 452, message: '4.2.2 Mailbox full' }, 'mailbox_full'],
    ['grey@slow.test', { code: 450, message: '4.2.0 Recipient address rejected: Greylisted' }, 'transient'],
  ])('of %s carries its class in the event, the webhook and the queue view', async (to, reply, cls) => {
    mx.scriptRecipient(to, reply);
    const r = await acme.live.post('/v1/emails', {
      from: 'Acme <hi@acme-delays.test>',
      subject: 'Hello',
      text: 'Hi',
      to: [to],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    await delivery.runOnce();
    const history = await emailHistory(svc, r.body.id);
    const delayed = history.find((e) => e.type === 'EmailDeliveryDelayed');
    expect(delayed?.data).toMatchObject({ recipient: to, smtpCode: reply.code, classification: cls });
    expect(publicData(delayed!, summaryOf(history))).toMatchObject({
      recipient: to,
      delay: { classification: cls },
    });
    // The email's public history and its recipient, as the API shows them.
    const events = await acme.live.get(`/v1/emails/${r.body.id}/events`);
    const shown = events.body.data.find((e: { type: string }) => e.type === 'email.delivery_delayed');
    expect(shown).toMatchObject({ recipient: to, data: { source: 'attempt', classification: cls } });
    await expect
      .poll(async () => (await acme.live.get(`/v1/emails/${r.body.id}`)).body.recipients)
      .toMatchObject([{ email: to, status: 'delayed', classification: cls }]);
    await delivery.stop(); // writes the queue view's replies
    delivery = new DeliveryProcess(svc.postline.services);
    const queue = await acme.live.get('/v1/queue?destination=slow.test');
    expect(queue.body.data[0]).toMatchObject({ last_classification: cls });
    // The next attempt delivers (the sink defers once): the recipient's class goes with its delay.
    clock.advance(
      Date.parse((delayed!.data as { nextAttemptAt: string }).nextAttemptAt) - clock.now().getTime() + 1_000,
    );
    await delivery.runOnce();
    await expect
      .poll(async () => (await acme.live.get(`/v1/emails/${r.body.id}`)).body.recipients)
      .toMatchObject([{ email: to, status: 'delivered', classification: null }]);
  });
});
