import { describe, expect, it } from 'vitest';
import type { EmailState } from '../../domain/emails/email.state.ts';
import { outcomeOf } from '../../processes/delivery/outcomes.ts';
import { EMAIL_RETRIES } from '../../processes/retry-schedule.ts';

const now = new Date('2026-06-01T00:00:00Z');
const MIN = 60_000;
/** An email whose one recipient has had `attempts` attempts, each deferred. */
const afterAttempts = (attempts: number) =>
  ({
    exists: true,
    orgId: 'org_1',
    mode: 'live',
    lifecycle: 'sent',
    sendAt: null,
    recipients: { 'ann@a.test': { status: attempts ? 'delayed' : 'pending', attempts } },
  }) as Extract<EmailState, { exists: true }>;
const deferred = { recipient: 'Ann@A.test', result: 'deferred' as const, smtpResponse: '451 4.7.1 later' };
const waited = {
  ...deferred,
  smtpResponse: 'local: all 1 connections of the shaping group g are in use; not counted as an attempt',
  attempted: false as const,
};
/** Within the schedule's jitter of `ms` from now. */
const about = (at: string | undefined, ms: number) => {
  const d = Date.parse(at!) - now.getTime();
  expect(d).toBeGreaterThanOrEqual(Math.floor(ms * (1 - EMAIL_RETRIES.jitter)));
  expect(d).toBeLessThanOrEqual(Math.ceil(ms * (1 + EMAIL_RETRIES.jitter)));
};

describe('outcomeOf: what an answer becomes', () => {
  it('delays a deferral as the attempt after the last, by the schedule', () => {
    const o = outcomeOf(afterAttempts(2), deferred, now);
    expect(o).toMatchObject({ recipient: 'ann@a.test', result: 'delayed', attempt: 3 });
    about(o.nextAttemptAt, EMAIL_RETRIES.delaysMs[2]);
  });
  it('bounces softly once the schedule is spent', () =>
    expect(outcomeOf(afterAttempts(EMAIL_RETRIES.delaysMs.length), deferred, now)).toMatchObject({
      result: 'bounced',
      bounceType: 'soft',
      attempt: EMAIL_RETRIES.delaysMs.length + 1,
    }));
  it('delays a wait for a connection slot by the first step, its count unchanged, however many came before', () => {
    for (const attempts of [0, 3, EMAIL_RETRIES.delaysMs.length]) {
      const o = outcomeOf(afterAttempts(attempts), waited, now);
      expect(o).toMatchObject({ result: 'delayed', attempt: attempts, attempted: false });
      about(o.nextAttemptAt, 1 * MIN);
    }
  });
});
