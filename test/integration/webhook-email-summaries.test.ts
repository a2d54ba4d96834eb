import { describe, expect, it } from 'vitest';
import { newId } from '../../platform/ids.ts';
import { EmailSummaries, SUMMARY_KEEP_DAYS } from '../../processes/webhooks/email-summaries.ts';
import { EmailSummariesPurgeProcess } from '../../processes/webhooks/email-summaries-purge.process.ts';
import { useWebhookProcesses } from '../support/webhook-processes.ts';
import { appendSourceEvent, emailQueuedData } from '../support/webhook-receiver.ts';

const { clock, svc, pump, subscribed } = useWebhookProcesses();
const DAY_MS = 86_400_000;

/** An email queued for `orgId`; `append` adds its later events. */
async function queued(orgId: string) {
  const emailId = newId('em');
  const meta = { orgId, mode: 'live' as const };
  const stream = `email-${emailId}`;
  await appendSourceEvent(
    svc.postline.services.store,
    stream,
    'EmailQueued',
    emailQueuedData(emailId, orgId, 'live'),
    meta,
  );
  return {
    emailId,
    append: (type: string, data: Record<string, unknown>) =>
      appendSourceEvent(svc.postline.services.store, stream, type, { emailId, ...data }, meta),
  };
}

const summaryRow = async (emailId: string) =>
  (
    await svc.postline.services.db.query<{ recorded_at: Date }>(
      'SELECT recorded_at FROM webhook_email_summaries WHERE email_id = $1',
      [emailId],
    )
  ).rows[0];

describe("webhook payloads' email summaries", () => {
  it(`keeps an email's summary ${SUMMARY_KEEP_DAYS} days, then deletes it; a later event still carries from, to and subject, read from the stream`, async () => {
    const { org, r } = await subscribed(['email.sent', 'email.delivered']);
    const email = await queued(org.orgId);
    await email.append('EmailSent', {
      messageId: `<${email.emailId}@acme.test>`,
      sentAt: clock.now().toISOString(),
    });
    await pump();
    expect((await summaryRow(email.emailId))?.recorded_at).toEqual(clock.now());

    const purge = new EmailSummariesPurgeProcess(svc.postline.services);
    clock.advance((SUMMARY_KEEP_DAYS - 1) * DAY_MS);
    expect(await purge.runOnce()).toBe(0);
    expect(await summaryRow(email.emailId)).toBeDefined();
    clock.advance(2 * DAY_MS);
    expect(await purge.runOnce()).toBeGreaterThanOrEqual(1);
    expect(await summaryRow(email.emailId)).toBeUndefined();

    const deliveredAt = clock.now().toISOString();
    await email.append('EmailDelivered', {
      recipient: 'ada@example.test',
      smtpResponse: '250 ok',
      deliveredAt,
    });
    await pump();
    const delivered = r.ofType('email.delivered');
    expect(delivered.map((d) => d.payload.data)).toEqual([
      expect.objectContaining({
        email_id: email.emailId,
        from: 'Acme <hello@acme.test>',
        to: ['ada@example.test'],
        subject: 'Welcome aboard',
        tags: ['welcome'],
        timestamp: deliveredAt,
      }),
    ]);
    // Read from the stream, it is kept again from now.
    expect((await summaryRow(email.emailId))?.recorded_at).toEqual(clock.now());
  });

  it('reads a summary the table lacks from the stream only for the events asked for', async () => {
    const { db, store } = svc.postline.services;
    const org = await svc.createOrg('pro');
    const email = await queued(org.orgId);
    const { position } = await email.append('EmailSent', {
      messageId: '<x@acme.test>',
      sentAt: clock.now().toISOString(),
    });
    const [sent] = (await store.readStream(`email-${email.emailId}`)).filter((e) => e.position === position);
    const summaries = new EmailSummaries(store, () => clock.now());

    expect(await summaries.of(db, [sent], () => false)).toEqual(new Map());
    expect(await summaryRow(email.emailId)).toBeUndefined();
    const read = await summaries.of(db, [sent]);
    expect(read).toEqual(
      new Map([
        [
          email.emailId,
          {
            from: 'Acme <hello@acme.test>',
            to: ['ada@example.test'],
            subject: 'Welcome aboard',
            tags: ['welcome'],
          },
        ],
      ]),
    );
    expect(await summaryRow(email.emailId)).toBeDefined();
  });
});
