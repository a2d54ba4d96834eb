import { describe, expect, it } from 'vitest';
import {
  BOUNCE_CLASSES,
  classifyBounce,
  classOfBounce,
  parseBounceRules,
  refusalOf,
} from '../../domain/emails/bounce-classes.ts';
import { suppressingOutcome } from '../../processes/suppression-policy/suppression-policy.process.ts';
import { BOUNCE_CORPUS } from '../fixtures/bounce-corpus.ts';

describe('bounce classification', () => {
  it('holds at least 60 replies of the large providers, each with its source', () => {
    expect(BOUNCE_CORPUS.length).toBeGreaterThanOrEqual(60);
    const providers = new Set(BOUNCE_CORPUS.map((c) => c.provider));
    for (const p of [
      'Gmail',
      'Microsoft',
      'Yahoo',
      'iCloud',
      'GMX/web.de',
      'T-Online',
      'Orange',
      'Proofpoint',
      'Mimecast',
    ])
      expect(providers).toContain(p);
    for (const c of BOUNCE_CORPUS) expect(c.source).toMatch(/^https?:\/\//);
  });

  it.each(BOUNCE_CORPUS.map((c) => [c.provider, c.reply, c.expected] as const))(
    '%s: given "%s", classifies it as %s',
    (_provider, reply, expected) => {
      // When
      const got = classifyBounce(reply);
      // Then
      expect(got).toBe(expected);
    },
  );

  it('given a 5xx, bounces hard only when its class says the address is dead', () => {
    expect(refusalOf('550 5.1.1 user unknown')).toEqual({
      bounceType: 'hard',
      classification: 'invalid_recipient',
    });
    expect(
      refusalOf('550 5.7.1 Service unavailable, Client host [192.0.2.1] blocked using Spamhaus'),
    ).toEqual({
      bounceType: 'soft',
      classification: 'spam_or_reputation_block',
    });
    expect(refusalOf('552 5.2.2 Over STORAGE quota').bounceType).toBe('soft');
    expect(refusalOf('550 5.2.1 User is inactive').bounceType).toBe('hard');
    expect(refusalOf('550 5.1.2 bad destination system').classification).toBe('bad_domain');
  });

  it('given an operator rule, tries it before the defaults', () => {
    // Given
    const rules = parseBounceRules([
      { text: 'Spamhaus', class: 'transient' },
      { status: '5.1.1', class: 'unknown' },
    ]);
    // When / Then
    expect(classifyBounce('550 5.7.1 blocked using Spamhaus', rules)).toBe('transient');
    expect(classifyBounce('550 5.1.1 no such user', rules)).toBe('unknown');
    expect(classifyBounce('552 5.2.2 over quota', rules)).toBe('mailbox_full');
  });

  it('refuses a faulty rules file, naming the entry', () => {
    expect(() => parseBounceRules({})).toThrow(/JSON array/);
    expect(() => parseBounceRules([{ text: 'x', class: 'nope' }])).toThrow(/rule 1: class must be one of/);
    expect(() => parseBounceRules([{ class: 'transient' }])).toThrow(/rule 1: needs a status or a text/);
    expect(() => parseBounceRules([{ status: '5.x', class: 'transient' }])).toThrow(/rule 1: status/);
    expect(() => parseBounceRules([{ text: '(', class: 'transient' }])).toThrow(
      /rule 1: text is not a valid/,
    );
    expect(() => parseBounceRules([{ text: 'a', class: 'transient', extra: 1 }])).toThrow(
      /unknown field extra/,
    );
    expect(BOUNCE_CLASSES).toContain('unknown');
  });

  it('classifies a bounce recorded before classes from its stored reply (hard) or as unknown (soft)', () => {
    expect(classOfBounce({ bounceType: 'hard', smtpResponse: '550 5.1.1 user unknown' })).toBe(
      'invalid_recipient',
    );
    expect(classOfBounce({ bounceType: 'soft', smtpResponse: 'gave up after 9 attempts: 451 busy' })).toBe(
      'unknown',
    );
    expect(classOfBounce({ bounceType: 'soft', classification: 'rate_limited', smtpResponse: 'x' })).toBe(
      'rate_limited',
    );
  });
});

describe('suppression policy and classes', () => {
  const bounced = (bounceType: 'hard' | 'soft', classification?: (typeof BOUNCE_CLASSES)[number]) => ({
    type: 'EmailBounced' as const,
    data: {
      emailId: 'em_1',
      recipient: 'a@x.test',
      bounceType,
      ...(classification && { classification }),
      smtpCode: 550,
      smtpResponse: '550',
      bouncedAt: 'T',
    },
  });

  it('suppresses a hard bounce with a suppressing class, and one recorded before classes', () => {
    expect(suppressingOutcome(bounced('hard', 'invalid_recipient'))?.reason).toBe('hard_bounce');
    expect(suppressingOutcome(bounced('hard', 'bad_domain'))?.reason).toBe('hard_bounce');
    expect(suppressingOutcome(bounced('hard', 'inactive_mailbox'))?.reason).toBe('hard_bounce');
    expect(suppressingOutcome(bounced('hard'))?.reason).toBe('hard_bounce');
  });

  it('never suppresses a block, a policy refusal or a soft bounce', () => {
    expect(suppressingOutcome(bounced('soft', 'spam_or_reputation_block'))).toBeNull();
    expect(suppressingOutcome(bounced('hard', 'spam_or_reputation_block'))).toBeNull();
    expect(suppressingOutcome(bounced('soft', 'invalid_recipient'))).toBeNull();
    expect(suppressingOutcome(bounced('soft'))).toBeNull();
  });
});

describe('refusals that say nothing of the recipient', () => {
  const suppressed = (reply: string) => {
    const refusal = refusalOf(reply);
    const event = {
      type: 'EmailBounced' as const,
      data: {
        emailId: 'em_1',
        recipient: 'bob@rcpt.test',
        bouncedAt: 'T',
        smtpCode: 550,
        smtpResponse: reply,
        ...refusal,
      },
    };
    return { ...refusal, suppressed: suppressingOutcome(event) !== null };
  };

  it.each([
    // Postfix reject_unknown_sender_domain: our return path's domain, not the recipient's
    ['550 5.1.8 <b+em_01abc@bounces.acme.test>: Sender address rejected: Domain not found', 'protocol_error'],
    ['450 4.1.8 <b+em_01abc@bounces.acme.test>: Sender address rejected: Domain not found', 'protocol_error'],
    // RFC 3463 X.1.7: the sender's mailbox address syntax
    [
      '553 5.1.7 The sender address <b+em_01abc@bounces.acme.test> is not a valid RFC 5321 address',
      'protocol_error',
    ],
    // Postfix check_sender_access: a policy about the sender
    [
      '554 5.7.1 <b+em_01abc@bounces.acme.test>: Sender address rejected: Access denied',
      'spam_or_reputation_block',
    ],
    // Postfix check_recipient_access: a policy, worded "Recipient address rejected", the address not in question
    ['554 5.7.1 <bob@rcpt.test>: Recipient address rejected: Access denied', 'spam_or_reputation_block'],
  ])('given "%s", classifies it as %s and never suppresses', (reply, expected) => {
    expect(suppressed(reply)).toEqual({ bounceType: 'soft', classification: expected, suppressed: false });
  });

  it('still suppresses a recipient the same wording says is unknown', () => {
    expect(suppressed('550 5.1.1 <bob@rcpt.test>: Recipient address rejected: User unknown')).toEqual({
      bounceType: 'hard',
      classification: 'invalid_recipient',
      suppressed: true,
    });
    expect(suppressed('550 <bob@rcpt.test>: Recipient address rejected: User unknown').suppressed).toBe(true);
    expect(
      suppressed('550 5.1.2 <bob@nowhere.test>: Recipient address rejected: Domain not found'),
    ).toMatchObject({
      classification: 'bad_domain',
      suppressed: true,
    });
  });
});
