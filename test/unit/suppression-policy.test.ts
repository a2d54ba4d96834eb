import { describe, expect, it } from 'vitest';
import type { EmailEvent } from '../../domain/emails/email.events.ts';
import { suppressingOutcome } from '../../processes/suppression-policy/suppression-policy.process.ts';

const at = '2026-07-01T09:00:00.000Z';
const bounced = (bounceType: 'hard' | 'soft'): EmailEvent => ({
  type: 'EmailBounced',
  data: {
    emailId: 'em_1',
    recipient: 'ann@x.test',
    bounceType,
    smtpCode: 550,
    smtpResponse: '550 5.1.1',
    bouncedAt: at,
  },
});

describe('what suppresses an address', () => {
  it('a hard bounce and a complaint do; a soft bounce and a delivery do not', () => {
    expect(suppressingOutcome(bounced('hard'))).toEqual({
      reason: 'hard_bounce',
      emailId: 'em_1',
      recipient: 'ann@x.test',
      at,
    });
    expect(
      suppressingOutcome({
        type: 'EmailComplained',
        data: { emailId: 'em_1', recipient: 'ann@x.test', complainedAt: at },
      }),
    ).toEqual({ reason: 'complaint', emailId: 'em_1', recipient: 'ann@x.test', at });
    expect(suppressingOutcome(bounced('soft'))).toBeNull();
    expect(
      suppressingOutcome({
        type: 'EmailDelivered',
        data: { emailId: 'em_1', recipient: 'ann@x.test', smtpResponse: '250', deliveredAt: at },
      }),
    ).toBeNull();
  });
});
