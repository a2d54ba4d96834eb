import { describe, expect, it } from 'vitest';
import { attemptEndsAfter } from '../../domain/emails/delivery-attempts.ts';
import { type EmailCommand, emailDecider } from '../../domain/emails/email.decider.ts';
import type { EmailContent, EmailEvent } from '../../domain/emails/email.events.ts';
import { foldEmail, statusOf } from '../../domain/emails/email.state.ts';
import { rollUp } from '../../domain/emails/status.ts';
import { inSequence } from '../../platform/eventstore/command.ts';
import { itHidesFromOtherCallers, spec } from '../support/given-when-then.ts';

const content: EmailContent = {
  emailId: 'em_1',
  orgId: 'org_1',
  mode: 'live',
  from: 'Acme <hi@acme.test>',
  to: ['Ann <ann@a.test>'],
  cc: ['bob@b.test'],
  bcc: [],
  replyTo: [],
  subject: 'Hello',
  html: '<p>Hi</p>',
  text: null,
  headers: {},
  tags: ['welcome'],
  attachments: [],
  domainId: 'dom_1',
  domainName: 'acme.test',
  suppressedRecipients: [],
  createdAt: '2026-01-01T00:00:00.000Z',
};
const T = (m: number) => new Date(Date.parse('2026-01-01T00:00:00Z') + m * 60_000).toISOString();
const queued: EmailEvent = { type: 'EmailQueued', data: content };
const scheduled: EmailEvent = { type: 'EmailScheduled', data: { ...content, sendAt: T(60) } };
const caller = { emailId: 'em_1', orgId: 'org_1', mode: 'live' as const, at: T(1) };
const canceled: EmailEvent = { type: 'EmailCanceled', data: { emailId: 'em_1', canceledAt: T(1) } };
const rescheduled: EmailEvent = { type: 'EmailRescheduled', data: { emailId: 'em_1', sendAt: T(120) } };
const released: EmailEvent = { type: 'EmailReleased', data: { emailId: 'em_1', releasedAt: T(60) } };
const started: EmailEvent = { type: 'EmailSendingStarted', data: { emailId: 'em_1', startedAt: T(1) } };
const sent: EmailEvent = {
  type: 'EmailSent',
  data: { emailId: 'em_1', messageId: '<em_1@acme.test>', sentAt: T(2) },
};
const delivered = (r: string): EmailEvent => ({
  type: 'EmailDelivered',
  data: { emailId: 'em_1', recipient: r, smtpResponse: '250 ok', deliveredAt: T(2) },
});
/** A hard bounce of ann@a.test. */
const bounced = (smtpResponse: string, bouncedAt: string): EmailEvent => ({
  type: 'EmailBounced',
  data: {
    emailId: 'em_1',
    recipient: 'ann@a.test',
    bounceType: 'hard',
    smtpCode: 550,
    smtpResponse,
    bouncedAt,
  },
});
const outcomes = (list: any[]): EmailCommand => ({
  type: 'RecordDeliveryOutcomes',
  emailId: 'em_1',
  messageId: '<em_1@acme.test>',
  at: T(2),
  outcomes: list,
});
const stateAfter = (events: EmailEvent[]) => events.reduce(emailDecider.evolve, emailDecider.initialState);

describe('email decider: accepting', () => {
  it('queues an email', () =>
    spec(emailDecider).given([]).when({ type: 'QueueEmail', content }).then([queued]));
  it('schedules an email with send_at', () =>
    spec(emailDecider)
      .given([])
      .when({ type: 'QueueEmail', content, sendAt: T(60) })
      .then([scheduled]));
  it('refuses the same id twice', () =>
    spec(emailDecider).given([queued]).when({ type: 'QueueEmail', content }).thenFails('conflict'));
  it('refuses an email whose recipients were all suppressed', () =>
    spec(emailDecider)
      .given([])
      .when({
        type: 'QueueEmail',
        content: { ...content, to: [], cc: [], suppressedRecipients: ['ann@a.test'] },
      })
      .thenFails('all_recipients_suppressed'));
  it('tracks each recipient once, case-insensitively', () => {
    const s = stateAfter([
      { type: 'EmailQueued', data: { ...content, to: ['A@a.test', 'a@A.test'], cc: [], bcc: ['c@c.test'] } },
    ]);
    expect(s.exists && Object.keys(s.recipients)).toEqual(['a@a.test', 'c@c.test']);
  });
});

describe('email decider: cancel and reschedule', () => {
  it('cancels a scheduled email', () =>
    spec(emailDecider)
      .given([scheduled])
      .when({ type: 'CancelEmail', ...caller })
      .then([canceled]));
  it('refuses to cancel a queued email (409)', () =>
    spec(emailDecider)
      .given([queued])
      .when({ type: 'CancelEmail', ...caller })
      .thenFails('email_not_scheduled', /queued/));
  it('refuses to cancel twice', () =>
    spec(emailDecider)
      .given([scheduled, canceled])
      .when({ type: 'CancelEmail', ...caller })
      .thenFails('email_not_scheduled', /canceled/));
  it('reschedules a scheduled email', () =>
    spec(emailDecider)
      .given([scheduled])
      .when({ type: 'RescheduleEmail', ...caller, sendAt: T(120) })
      .then([rescheduled]));
  it('refuses to reschedule a released email', () =>
    spec(emailDecider)
      .given([scheduled, released])
      .when({ type: 'RescheduleEmail', ...caller, sendAt: T(120) })
      .thenFails('email_not_scheduled'));
  itHidesFromOtherCallers(emailDecider, [scheduled], { type: 'CancelEmail', ...caller });
  it('answers 404 for an email that does not exist', () =>
    spec(emailDecider)
      .given([])
      .when({ type: 'CancelEmail', ...caller })
      .thenFails('not_found'));
});

describe('email decider: a stopped broadcast withdraws its emails', () => {
  const withdraw: EmailCommand = { type: 'WithdrawEmail', emailId: 'em_1', at: T(1) };
  it('cancels a queued email, or a scheduled one', () => {
    spec(emailDecider).given([queued]).when(withdraw).then([canceled]);
    spec(emailDecider).given([scheduled]).when(withdraw).then([canceled]);
  });
  it.each<[string, EmailEvent[]]>([
    ['one canceled already', [queued, canceled]],
    ['one that was never accepted', []],
  ])('leaves alone %s', (_, history) => spec(emailDecider).given(history).when(withdraw).then([]));

  const at = (minutes: number, seconds = 0) =>
    new Date(Date.parse(T(minutes)) + seconds * 1000).toISOString();
  const withdrawAt = (when: string): EmailCommand => ({ type: 'WithdrawEmail', emailId: 'em_1', at: when });
  const canceledAt = (when: string): EmailEvent => ({
    type: 'EmailCanceled',
    data: { emailId: 'em_1', canceledAt: when },
  });
  /** The MTA's attempt on both recipients at T(1), to end by 35 s later. */
  const attempt: EmailEvent = {
    type: 'EmailDeliveryAttemptStarted',
    data: { emailId: 'em_1', recipients: ['ann@a.test', 'bob@b.test'], startedAt: T(1), endsBy: at(1, 35) },
  };
  const delayed = (recipient: string): EmailEvent => ({
    type: 'EmailDeliveryDelayed',
    data: {
      emailId: 'em_1',
      recipient,
      attempt: 1,
      nextAttemptAt: T(30),
      smtpCode: 451,
      smtpResponse: '451 4.7.1 Try again later',
      delayedAt: T(2),
    },
  });
  it('cancels one waiting for a retry of every recipient, or started but not yet attempted', () => {
    spec(emailDecider)
      .given([queued, started, attempt, sent, delayed('ann@a.test'), delayed('bob@b.test')])
      .when(withdrawAt(T(5)))
      .then([canceledAt(T(5))]);
    spec(emailDecider)
      .given([queued, started])
      .when(withdrawAt(T(5)))
      .then([canceledAt(T(5))]);
  });
  it('cancels one whose attempt ended without an outcome (its process died)', () =>
    spec(emailDecider)
      .given([queued, started, attempt])
      .when(withdrawAt(at(1, 36)))
      .then([canceledAt(at(1, 36))]));
  it('tells when an attempt in flight ends, for the withdrawal to look again then', () => {
    expect(attemptEndsAfter(foldEmail([queued, started, attempt]), Date.parse(at(1, 10)))).toEqual(
      new Date(at(1, 35)),
    );
    expect(attemptEndsAfter(foldEmail([queued, started, attempt]), Date.parse(at(1, 35)))).toBeNull();
    const deferred = foldEmail([
      queued,
      started,
      attempt,
      sent,
      delayed('ann@a.test'),
      delayed('bob@b.test'),
    ]);
    expect(attemptEndsAfter(deferred, Date.parse(at(1, 10)))).toBeNull();
  });
  it.each<[string, EmailEvent[]]>([
    ['with an attempt in flight', [queued, started, attempt]],
    [
      'that a recipient received',
      [queued, started, attempt, sent, delivered('ann@a.test'), delayed('bob@b.test')],
    ],
  ])('leaves alone one %s', (_, history) =>
    spec(emailDecider)
      .given(history)
      .when(withdrawAt(at(1, 10)))
      .then([]),
  );
});

describe('email decider: scheduler', () => {
  const release = (at: string): EmailCommand => ({ type: 'ReleaseEmail', emailId: 'em_1', at });
  it('releases a due email', () =>
    spec(emailDecider)
      .given([scheduled])
      .when(release(T(60)))
      .then([released]));
  it.each<[string, EmailEvent[], string]>([
    ['does not release early', [scheduled], T(59)],
    ['does not release an email rescheduled later', [scheduled, rescheduled], T(60)],
    ['does not release a canceled email (cancel won the race)', [scheduled, canceled], T(60)],
    ['releases once', [scheduled, released], T(61)],
  ])('%s', (_, history, at) => spec(emailDecider).given(history).when(release(at)).then([]));
});

describe('email decider: delivery', () => {
  it('starts sending a queued email once', () => {
    spec(emailDecider)
      .given([queued])
      .when({ type: 'StartSending', emailId: 'em_1', at: T(1) })
      .then([started]);
    spec(emailDecider)
      .given([queued, started])
      .when({ type: 'StartSending', emailId: 'em_1', at: T(1) })
      .then([]);
  });
  it('starts and records sent in one decision, each command on the state the one before it left (inSequence)', () => {
    const sendAtOnce = [{ type: 'StartSending', emailId: 'em_1', at: T(1) } as EmailCommand, outcomes([])];
    spec(inSequence(emailDecider)).given([queued]).when(sendAtOnce).then([started, sent]);
    // Played again after a crash: started and sent already, nothing more.
    spec(inSequence(emailDecider)).given([queued, started, sent]).when(sendAtOnce).then([]);
    // Canceled before it went: neither.
    spec(inSequence(emailDecider)).given([scheduled, canceled]).when(sendAtOnce).then([]);
  });
  it('does not start a scheduled email before it is released', () =>
    spec(emailDecider)
      .given([scheduled])
      .when({ type: 'StartSending', emailId: 'em_1', at: T(1) })
      .then([]));
  it('records sent with the first outcomes', () =>
    spec(emailDecider)
      .given([queued, started])
      .when(outcomes([{ recipient: 'ann@a.test', result: 'delivered', attempt: 1, smtpResponse: '250 ok' }]))
      .then([sent, delivered('ann@a.test')]));
  it('records delayed, then delivered', () => {
    const delayed: EmailEvent = {
      type: 'EmailDeliveryDelayed',
      data: {
        emailId: 'em_1',
        recipient: 'bob@b.test',
        attempt: 1,
        nextAttemptAt: T(3),
        smtpResponse: '451 later',
        smtpCode: 451,
        delayedAt: T(2),
      },
    };
    spec(emailDecider)
      .given([queued, started, sent])
      .when(
        outcomes([
          {
            recipient: 'bob@b.test',
            result: 'delayed',
            attempt: 1,
            smtpCode: 451,
            smtpResponse: '451 later',
            nextAttemptAt: T(3),
          },
        ]),
      )
      .then([delayed]);
    // A replay of the same attempt is nothing new (at-least-once delivery process).
    spec(emailDecider)
      .given([queued, started, sent, delayed])
      .when(outcomes([{ recipient: 'bob@b.test', result: 'delayed', attempt: 1, smtpResponse: '451 later' }]))
      .then([]);
    spec(emailDecider)
      .given([queued, started, sent, delayed])
      .when(outcomes([{ recipient: 'bob@b.test', result: 'delivered', attempt: 2, smtpResponse: '250 ok' }]))
      .then([delivered('bob@b.test')]);
  });
  it('records a hard bounce with the SMTP code', () =>
    spec(emailDecider)
      .given([queued, started, sent])
      .when(
        outcomes([
          {
            recipient: 'ann@a.test',
            result: 'bounced',
            attempt: 1,
            smtpCode: 550,
            smtpResponse: '550 no such user',
          },
        ]),
      )
      .then([bounced('550 no such user', T(2))]));
  it('ignores outcomes for final or unknown recipients', () =>
    spec(emailDecider)
      .given([queued, started, sent, delivered('ann@a.test')])
      .when(
        outcomes([
          { recipient: 'ann@a.test', result: 'bounced', attempt: 1, smtpResponse: '550' },
          { recipient: 'eve@e.test', result: 'delivered', attempt: 1, smtpResponse: '250' },
        ]),
      )
      .then([]));
  it('records outcomes for a canceled email never', () =>
    spec(emailDecider)
      .given([scheduled, canceled])
      .when(outcomes([{ recipient: 'ann@a.test', result: 'delivered', attempt: 1, smtpResponse: '250' }]))
      .then([]));
});

describe('email decider: delivery attempts', () => {
  const ann = 'ann@a.test';
  const bob = 'bob@b.test';
  /** The MTA is about to send to `recipients` at `at`; its attempt ends by `at` + 35 s. */
  const start = (recipients: string[], at: string): EmailCommand => ({
    type: 'StartDeliveryAttempt',
    emailId: 'em_1',
    recipients,
    at,
    endsBy: plus(at, 35),
  });
  const plus = (at: string, s: number) => new Date(Date.parse(at) + s * 1000).toISOString();
  const attempt = (recipients: string[], at: string, outcomeUnknown?: string[]): EmailEvent => ({
    type: 'EmailDeliveryAttemptStarted',
    data: {
      emailId: 'em_1',
      recipients,
      startedAt: at,
      endsBy: plus(at, 35),
      ...(outcomeUnknown && { outcomeUnknown }),
    },
  });
  const delayedBob: EmailEvent = {
    type: 'EmailDeliveryDelayed',
    data: {
      emailId: 'em_1',
      recipient: bob,
      attempt: 1,
      nextAttemptAt: T(3),
      smtpResponse: '451 later',
      smtpCode: 451,
      delayedAt: T(2),
    },
  };

  it('records the first attempt with sending, for the recipients given, lower-cased, in one append', () =>
    spec(emailDecider)
      .given([queued])
      .when(start(['Ann@A.test', bob], T(1)))
      .then([started, attempt([ann, bob], T(1))]));
  it('never attempts a canceled email, whatever copy of its stream the MTA read before', () =>
    spec(emailDecider)
      .given([queued, canceled])
      .when(start([ann, bob], T(2)))
      .then([]));
  it('leaves out recipients it does not know, final ones, and delayed ones before their retry', () =>
    spec(emailDecider)
      .given([queued, started, attempt([ann, bob], T(1)), sent, delivered(ann), delayedBob])
      .when(start([ann, bob, 'eve@e.test'], T(2.5)))
      .then([]));
  it('attempts a delayed recipient again once its retry time has come', () =>
    spec(emailDecider)
      .given([queued, started, attempt([ann, bob], T(1)), sent, delivered(ann), delayedBob])
      .when(start([ann, bob], T(3)))
      .then([attempt([bob], T(3))]));
  it('leaves a recipient alone while an attempt on it is in flight: another process sends to it', () =>
    spec(emailDecider)
      .given([queued, started, attempt([ann], T(1))])
      .when(start([ann, bob], plus(T(1), 34)))
      .then([attempt([bob], plus(T(1), 34))]));
  it('attempts again after the end of an attempt that has no outcome, naming it a possible duplicate', () =>
    spec(emailDecider)
      .given([queued, started, attempt([ann, bob], T(1))])
      .when(start([ann, bob], plus(T(1), 35)))
      .then([attempt([ann, bob], plus(T(1), 35), [ann, bob])]));
  it('knows an attempt with an outcome is over, whatever its end', () =>
    spec(emailDecider)
      .given([queued, started, attempt([ann, bob], T(1)), sent, delivered(ann), delayedBob])
      .when(start([bob], T(3)))
      .then([attempt([bob], T(3))]));
  it('attempts nothing for a scheduled or canceled email', () => {
    spec(emailDecider)
      .given([scheduled])
      .when(start([ann], T(1)))
      .then([]);
    spec(emailDecider)
      .given([scheduled, canceled])
      .when(start([ann], T(1)))
      .then([]);
  });
  describe('a deferral no server gave (no connection slot came free): not an attempt', () => {
    const waited = {
      recipient: bob,
      result: 'delayed',
      attempt: 0,
      attempted: false,
      nextAttemptAt: T(3),
      smtpResponse: 'local: all 1 connections of the shaping group g are in use; not counted as an attempt',
    };
    const waitedBob: EmailEvent = {
      type: 'EmailDeliveryDelayed',
      data: {
        emailId: 'em_1',
        recipient: bob,
        attempt: 0,
        nextAttemptAt: T(3),
        smtpResponse: waited.smtpResponse,
        attempted: false,
        delayedAt: T(2),
      },
    };
    it('ends the attempt in flight, its count unchanged, and the email is not sent by it', () => {
      spec(emailDecider)
        .given([queued, started, attempt([bob], T(1))])
        .when(outcomes([waited]))
        .then([waitedBob]);
      const s = stateAfter([queued, started, attempt([bob], T(1)), waitedBob]);
      expect(s.exists && s.recipients[bob]).toEqual({ status: 'delayed', attempts: 0, nextAttemptAt: T(3) });
      expect(s.exists && s.lifecycle).toBe('sending');
    });
    it('is recorded once: played again, it finds no attempt in flight', () =>
      spec(emailDecider)
        .given([queued, started, attempt([bob], T(1)), waitedBob])
        .when(outcomes([waited]))
        .then([]));
    it('leaves the count where an earlier failure put it, and the next failure is the attempt after that', () =>
      spec(emailDecider)
        .given([
          queued,
          started,
          attempt([bob], T(1)),
          sent,
          delayedBob,
          attempt([bob], T(3)),
          { ...waitedBob, data: { ...waitedBob.data, attempt: 1 } },
          attempt([bob], T(4)),
        ])
        .when(
          outcomes([
            {
              recipient: bob,
              result: 'delayed',
              attempt: 2,
              nextAttemptAt: T(9),
              smtpResponse: '451 later',
              smtpCode: 451,
            },
          ]),
        )
        .then([
          {
            type: 'EmailDeliveryDelayed',
            data: {
              emailId: 'em_1',
              recipient: bob,
              attempt: 2,
              nextAttemptAt: T(9),
              smtpResponse: '451 later',
              smtpCode: 451,
              delayedAt: T(2),
            },
          },
        ]));
  });
  it('keeps the attempt in flight in the state until an outcome', () => {
    const inFlight = { startedAt: T(1), endsBy: plus(T(1), 35) };
    const s = stateAfter([queued, started, attempt([ann, bob], T(1)), sent, delivered(ann)]);
    expect(s.exists && s.recipients).toEqual({
      [ann]: { status: 'delivered', attempts: 0 },
      [bob]: { status: 'pending', attempts: 0, inFlight },
    });
  });
});

describe('email decider: complaints and tracking', () => {
  const afterDelivery = [queued, started, sent, delivered('ann@a.test')];
  /** A delivery status report about ann@a.test (in the case the reporting server wrote) at T(9). */
  const aboutAnn = (smtpCode: number, smtpResponse: string) => ({
    emailId: 'em_1',
    recipient: 'Ann@a.test',
    smtpCode,
    smtpResponse,
    at: T(9),
  });
  it('records a complaint once', () => {
    const complained: EmailEvent = {
      type: 'EmailComplained',
      data: { emailId: 'em_1', recipient: 'ann@a.test', complainedAt: T(5) },
    };
    spec(emailDecider)
      .given(afterDelivery)
      .when({ type: 'RecordComplaint', emailId: 'em_1', recipient: 'Ann@A.test', at: T(5) })
      .then([complained]);
    spec(emailDecider)
      .given([...afterDelivery, complained])
      .when({ type: 'RecordComplaint', emailId: 'em_1', recipient: 'ann@a.test', at: T(6) })
      .then([]);
  });
  it('records a bounce report after delivery, once', () => {
    const report: EmailCommand = {
      type: 'RecordBounceReport',
      bounceType: 'hard',
      ...aboutAnn(550, '5.1.1 user unknown'),
    };
    const reported = bounced('5.1.1 user unknown', T(9));
    spec(emailDecider).given(afterDelivery).when(report).then([reported]);
    spec(emailDecider)
      .given([...afterDelivery, reported])
      .when(report)
      .then([]);
    spec(emailDecider).given([queued]).when(report).then([]);
  });
  it('records a delay report after delivery without changing the recipient, until it bounced', () => {
    const report: EmailCommand = { type: 'RecordDelayReport', ...aboutAnn(452, '4.2.2 mailbox full') };
    const reported: EmailEvent = {
      type: 'EmailDelayReported',
      data: {
        emailId: 'em_1',
        recipient: 'ann@a.test',
        smtpCode: 452,
        smtpResponse: '4.2.2 mailbox full',
        reportedAt: T(9),
      },
    };
    spec(emailDecider).given(afterDelivery).when(report).then([reported]);
    // News only: the recipient stays delivered, so delivery never tries it again.
    expect(stateAfter([...afterDelivery, reported])).toEqual(stateAfter(afterDelivery));
    spec(emailDecider)
      .given([...afterDelivery, bounced('x', T(8))])
      .when(report)
      .then([]);
    spec(emailDecider).given([queued]).when(report).then([]);
  });
  it('records opens and clicks only for an email that went out, with no client details by default', () => {
    const open: EmailCommand = { type: 'RecordOpen', emailId: 'em_1', at: T(9) };
    spec(emailDecider).given([queued]).when(open).then([]);
    spec(emailDecider)
      .given([queued, started, sent])
      .when(open)
      .then([{ type: 'EmailOpened', data: { emailId: 'em_1', openedAt: T(9) } }]);
    spec(emailDecider)
      .given([queued, started, sent])
      .when({ type: 'RecordClick', emailId: 'em_1', link: 'https://x.test/', at: T(9) })
      .then([{ type: 'EmailClicked', data: { emailId: 'em_1', link: 'https://x.test/', clickedAt: T(9) } }]);
  });

  it('records the sealed client details an organization that asks for them gives', () => {
    spec(emailDecider)
      .given([queued, started, sent])
      .when({ type: 'RecordOpen', emailId: 'em_1', client: 'pd1.sealed', at: T(9) })
      .then([{ type: 'EmailOpened', data: { emailId: 'em_1', client: 'pd1.sealed', openedAt: T(9) } }]);
    spec(emailDecider)
      .given([queued, started, sent])
      .when({ type: 'RecordClick', emailId: 'em_1', link: 'https://x.test/', client: 'pd1.c', at: T(9) })
      .then([
        {
          type: 'EmailClicked',
          data: { emailId: 'em_1', link: 'https://x.test/', client: 'pd1.c', clickedAt: T(9) },
        },
      ]);
  });
});

describe('status roll-up of several recipients', () => {
  it.each([
    ['scheduled', [], 'scheduled'],
    ['sending', ['pending'], 'sending'],
    ['sent', ['pending', 'delivered'], 'sent'],
    ['sent', ['delayed', 'delivered'], 'sent'],
    ['sent', ['delivered', 'bounced'], 'delivered'],
    ['sent', ['bounced', 'bounced'], 'bounced'],
    ['sent', ['pending', 'complained'], 'complained'],
    ['sent', ['delivered', 'complained'], 'complained'],
  ] as const)('%s with %j is %s', (lifecycle, recipients, expected) => {
    expect(rollUp(lifecycle, [...recipients])).toBe(expected);
  });
  it('follows the events', () => {
    const s = stateAfter([queued, started, sent, delivered('ann@a.test')]);
    expect(statusOf(s)).toBe('sent');
    expect(
      statusOf(stateAfter([queued, started, sent, delivered('ann@a.test'), delivered('bob@b.test')])),
    ).toBe('delivered');
  });
});
