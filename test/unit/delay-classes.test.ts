import { describe, expect, it } from 'vitest';
import { classifyBounce } from '../../domain/emails/bounce-classes.ts';
import { emailDecider } from '../../domain/emails/email.decider.ts';
import type { EmailContent, EmailEvent } from '../../domain/emails/email.events.ts';
import type { EmailState } from '../../domain/emails/email.state.ts';
import type { StoredEvent } from '../../platform/eventstore/types.ts';
import { outcomeOf } from '../../processes/delivery/outcomes.ts';
import { EMAIL_RETRIES } from '../../processes/retry-schedule.ts';
import { DelayedData } from '../../processes/webhooks/public-events.v1.schema.ts';
import { publicData } from '../../processes/webhooks/public-events.v1.ts';
import { spec } from '../support/given-when-then.ts';

/**
 * A delay carries a class as a bounce does (the same classes, the same rules): in its event and in the
 * `email.delivery_delayed` webhook (`delay.classification`); an event recorded before delays had classes, and a
 * delay report, get the class of their stored reply.
 */
const now = new Date('2026-06-01T00:00:00Z');
const ann = 'ann@a.test';
const afterAttempts = (attempts: number) =>
  ({
    exists: true,
    orgId: 'org_1',
    mode: 'live',
    lifecycle: 'sent',
    sendAt: null,
    recipients: { [ann]: { status: attempts ? 'delayed' : 'pending', attempts } },
  }) as Extract<EmailState, { exists: true }>;
const deferredBy = (smtpResponse: string) =>
  outcomeOf(afterAttempts(1), { recipient: ann, result: 'deferred', smtpResponse }, now);

describe('the class of a deferral', () => {
  it.each([
    ['421 4.7.28 Our system has detected an unusual rate of unsolicited mail', 'rate_limited'],
    ['421 4.7.0 [TSS04] Messages from 192.0.2.1 temporarily deferred due to user complaints', 'rate_limited'],
    ['452 4.2.2 The email account that you tried to reach is over quota', 'mailbox_full'],
    [
      '450 4.2.0 <ann@a.test>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/help/a.test.html',
      'transient',
    ],
    ['451 4.7.1 Greylisting in action, please come back later', 'transient'],
    [
      '451 4.7.1 Service unavailable, Client host [192.0.2.1] blocked using zen.spamhaus.org',
      'spam_or_reputation_block',
    ],
    ['451 4.3.0 Temporary failure, try again later', 'transient'],
    ['local: sending domain acme.test is no longer available', 'unknown'],
  ])('%s is %s', (reply, cls) => {
    expect(deferredBy(reply)).toMatchObject({ result: 'delayed', classification: cls });
  });

  it('is the class of the bounce once the retries ran out, and Postline’s own words are no provider’s class', () => {
    const last = outcomeOf(
      afterAttempts(EMAIL_RETRIES.delaysMs.length),
      {
        recipient: ann,
        result: 'deferred',
        smtpResponse: 'local: sending domain acme.test is no longer available',
      },
      now,
    );
    expect(last).toMatchObject({ result: 'bounced', bounceType: 'soft', classification: 'unknown' });
  });

  it('goes into EmailDeliveryDelayed', () => {
    const content = { emailId: 'em_1', orgId: 'org_1', mode: 'live', to: [ann], cc: [], bcc: [] };
    const queued = { type: 'EmailQueued', data: content as unknown as EmailContent } as EmailEvent;
    const started: EmailEvent = {
      type: 'EmailSendingStarted',
      data: { emailId: 'em_1', startedAt: now.toISOString() },
    };
    const outcome = deferredBy('452 4.2.2 Mailbox full');
    spec(emailDecider)
      .given([queued, started])
      .when({
        type: 'RecordDeliveryOutcomes',
        emailId: 'em_1',
        messageId: '<em_1@acme.test>',
        at: now.toISOString(),
        outcomes: [outcome],
      })
      .then((events) =>
        expect(events.find((e) => e.type === 'EmailDeliveryDelayed')?.data).toMatchObject({
          classification: 'mailbox_full',
        }),
      );
  });
});

describe('email.delivery_delayed', () => {
  const stored = (type: string, data: Record<string, unknown>): StoredEvent => ({
    type,
    data: { emailId: 'em_1', recipient: ann, ...data },
    metadata: { orgId: 'org_1', mode: 'live', actor: 'system' },
    streamId: 'email-em_1',
    revision: 3,
    position: '1.3',
    createdAt: now,
  });
  const summary = { from: 'hi@acme.test', to: [ann], subject: 'Hello', tags: [] };
  const delayOf = (event: StoredEvent) => {
    const data = publicData(event, summary);
    expect(DelayedData.safeParse(data).success, JSON.stringify(data)).toBe(true);
    return (data as { delay: unknown }).delay;
  };

  it('carries the class the event recorded', () =>
    expect(
      delayOf(
        stored('EmailDeliveryDelayed', {
          attempt: 1,
          nextAttemptAt: now.toISOString(),
          smtpResponse: '451 4.3.0 later',
          smtpCode: 451,
          classification: 'rate_limited',
          delayedAt: now.toISOString(),
        }),
      ),
    ).toEqual({ classification: 'rate_limited' }));

  it('reads an event recorded before delays had classes with the class of its stored reply', () =>
    expect(
      delayOf(
        stored('EmailDeliveryDelayed', {
          attempt: 1,
          nextAttemptAt: now.toISOString(),
          smtpResponse: '421 4.7.28 unusual rate',
          smtpCode: 421,
          delayedAt: now.toISOString(),
        }),
      ),
    ).toEqual({ classification: 'rate_limited' }));

  it('gives a delay report the class of its reply', () => {
    const reply = '4.2.2 mailbox full';
    expect(
      delayOf(
        stored('EmailDelayReported', { smtpCode: null, smtpResponse: reply, reportedAt: now.toISOString() }),
      ),
    ).toEqual({ classification: classifyBounce(reply) });
    expect(classifyBounce(reply)).toBe('mailbox_full');
  });
});
