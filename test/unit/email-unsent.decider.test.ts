import { describe, expect, it } from 'vitest';
import type { DeliveryOutcome } from '../../domain/emails/delivery-attempts.ts';
import { type EmailCommand, emailDecider } from '../../domain/emails/email.decider.ts';
import type { EmailContent, EmailEvent } from '../../domain/emails/email.events.ts';
import { foldEmail, statusOf } from '../../domain/emails/email.state.ts';
import { rollUp } from '../../domain/emails/status.ts';
import { spec } from '../support/given-when-then.ts';

/**
 * Outcomes Postline decides without sending anything (`sent: false`: the sending domain is gone, the operator gave
 * the destination up): no `EmailSent`, and a recipient whose attempt is in flight is left to that attempt.
 */
const T = (s: number) => new Date(Date.parse('2026-01-01T00:00:00Z') + s * 1000).toISOString();
const ann = 'ann@a.test';
const content = {
  emailId: 'em_1',
  orgId: 'org_1',
  mode: 'live',
  from: 'hi@acme.test',
  to: [ann],
  cc: [],
  bcc: [],
  replyTo: [],
  subject: 'Hello',
  html: null,
  text: 'Hi',
  headers: {},
  tags: [],
  attachments: [],
  domainId: 'dom_1',
  domainName: 'acme.test',
  suppressedRecipients: [],
  createdAt: T(0),
} satisfies EmailContent;
const queued: EmailEvent = { type: 'EmailQueued', data: content };
const started: EmailEvent = { type: 'EmailSendingStarted', data: { emailId: 'em_1', startedAt: T(1) } };
const attempt = (at: number): EmailEvent => ({
  type: 'EmailDeliveryAttemptStarted',
  data: { emailId: 'em_1', recipients: [ann], startedAt: T(at), endsBy: T(at + 35) },
});
const record = (at: number, outcomes: DeliveryOutcome[]): EmailCommand => ({
  type: 'RecordDeliveryOutcomes',
  emailId: 'em_1',
  messageId: '<em_1@acme.test>',
  at: T(at),
  outcomes,
});
const noDomain: DeliveryOutcome = {
  recipient: ann,
  result: 'delayed',
  attempt: 1,
  nextAttemptAt: T(62),
  smtpResponse: 'local: sending domain acme.test is no longer available',
  sent: false,
};
const givenUp: DeliveryOutcome = {
  recipient: ann,
  result: 'bounced',
  attempt: 1,
  bounceType: 'soft',
  classification: 'unknown',
  smtpResponse: 'local: delivery to a.test was given up by the operator',
  sent: false,
};
const delayedNoDomain: EmailEvent = {
  type: 'EmailDeliveryDelayed',
  data: {
    emailId: 'em_1',
    recipient: ann,
    attempt: 1,
    nextAttemptAt: T(62),
    smtpResponse: noDomain.smtpResponse,
    delayedAt: T(2),
  },
};
const bouncedGivenUp = (at: number): EmailEvent => ({
  type: 'EmailBounced',
  data: {
    emailId: 'em_1',
    recipient: ann,
    bounceType: 'soft',
    smtpCode: null,
    smtpResponse: givenUp.smtpResponse,
    classification: 'unknown',
    bouncedAt: T(at),
  },
});

describe('outcomes decided without a send', () => {
  it('delay a recipient without EmailSent: the email stays sending', () => {
    spec(emailDecider)
      .given([queued, started])
      .when(record(2, [noDomain]))
      .then([delayedNoDomain]);
    expect(statusOf(foldEmail([queued, started, delayedNoDomain]))).toBe('sending');
  });

  it('leave EmailSent to the first attempt that sends', () =>
    spec(emailDecider)
      .given([queued, started, delayedNoDomain, attempt(62)])
      .when(
        record(63, [
          { recipient: ann, result: 'delivered', attempt: 2, smtpResponse: '250 ok', smtpCode: 250 },
        ]),
      )
      .then([
        { type: 'EmailSent', data: { emailId: 'em_1', messageId: '<em_1@acme.test>', sentAt: T(63) } },
        {
          type: 'EmailDelivered',
          data: { emailId: 'em_1', recipient: ann, smtpResponse: '250 ok', deliveredAt: T(63) },
        },
      ]));

  it('bounce a recipient without EmailSent: once every recipient bounced, the email is bounced', () => {
    spec(emailDecider)
      .given([queued, started])
      .when(record(2, [givenUp]))
      .then([bouncedGivenUp(2)]);
    expect(statusOf(foldEmail([queued, started, bouncedGivenUp(2)]))).toBe('bounced');
  });

  it("leave a recipient whose attempt is in flight to that attempt, until the attempt's end", () => {
    spec(emailDecider)
      .given([queued, started, attempt(1)])
      .when(record(35, [givenUp]))
      .then([]);
    // Past its end without an outcome, the attempt's outcome is unknown: the give-up settles the recipient.
    spec(emailDecider)
      .given([queued, started, attempt(1)])
      .when(record(36, [givenUp]))
      .then([bouncedGivenUp(36)]);
  });

  it('roll up: sending with every recipient bounced is bounced; with one still waiting, sending', () => {
    expect(rollUp('sending', ['bounced', 'bounced'])).toBe('bounced');
    expect(rollUp('sending', ['bounced', 'delayed'])).toBe('sending');
    expect(rollUp('sending', [])).toBe('sending');
  });
});
