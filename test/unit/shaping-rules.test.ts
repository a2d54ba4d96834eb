import { describe, expect, it } from 'vitest';
import { DEFAULT_SHAPING } from '../../domain/delivery/shaping-defaults.ts';
import {
  backoffMs,
  effectiveFactor,
  groupOf,
  hostMatches,
  replyAction,
  type ShapingReply,
} from '../../domain/delivery/shaping-rules.ts';
import { classifyBounce } from '../../domain/emails/bounce-classes.ts';

/** A refusal as delivery hands it over: its class from the shipped bounce rules. */
const refused = (smtpResponse: string): ShapingReply => ({
  smtpCode: Number(smtpResponse.slice(0, 3)),
  smtpResponse,
  classification: classifyBounce(smtpResponse),
  result: smtpResponse.startsWith('5') ? 'bounced' : 'deferred',
});

const group = (domain: string, mx: string[]) => groupOf(DEFAULT_SHAPING, domain, mx);

describe('MX host patterns', () => {
  it('given *.google.com, matches hosts under it at any depth, not google.com itself', () => {
    expect(hostMatches('*.google.com', 'gmail-smtp-in.l.google.com')).toBe(true);
    expect(hostMatches('*.google.com', 'ASPMX.L.GOOGLE.COM.')).toBe(true);
    expect(hostMatches('*.google.com', 'google.com')).toBe(false);
    expect(hostMatches('*.google.com', 'notgoogle.com')).toBe(false);
    expect(hostMatches('aspmx.l.google.com', 'aspmx.l.google.com')).toBe(true);
    expect(hostMatches('aspmx.l.google.com', 'alt1.aspmx.l.google.com')).toBe(false);
  });
});

describe('groupOf', () => {
  it.each([
    ['gmail.com', ['gmail-smtp-in.l.google.com'], 'google'],
    ['workspace-customer.de', ['aspmx.l.google.com', 'alt1.aspmx.l.google.com'], 'google'],
    ['googlemail.com', ['gmail-smtp-in.l.google.com'], 'google'],
    ['hotmail.com', ['hotmail-com.olc.protection.outlook.com'], 'microsoft'],
    ['contoso.com', ['contoso-com.mail.protection.outlook.com'], 'microsoft'],
    ['yahoo.com', ['mta5.am0.yahoodns.net'], 'yahoo'],
    ['aol.com', ['mx-aol.mail.gm0.yahoodns.net'], 'yahoo'],
    ['icloud.com', ['mx01.mail.icloud.com'], 'icloud'],
    ['gmx.de', ['mx00.emig.gmx.net'], 'gmx-webde'],
    ['web.de', ['mx-ha03.web.de'], 'gmx-webde'],
    ['small-business.de', ['mx00.kundenserver.de'], 'gmx-webde'],
  ])('given %s with MX %j, the group is %s', (domain, mx, expected) => {
    expect(group(domain, mx).name).toBe(expected);
  });

  it('given a destination no group names, it is a group of its own named after its first MX host, with the default limits', () => {
    // When
    const g = group('example.org', ['Mail.Example.org.', 'backup.example.net']);
    // Then
    const { replies, ...limits } = DEFAULT_SHAPING.default;
    expect(g).toEqual({ name: 'mx:mail.example.org', limits, replies });
    expect(group('example.org', []).name).toBe('mx:example.org');
  });

  it('given a backup MX of a provider after an unknown primary, the provider decides', () => {
    expect(group('example.org', ['mx.example.org', 'alt1.aspmx.l.google.com']).name).toBe('google');
  });

  it('given a smarthost, every destination is the group smarthost', () => {
    expect(
      groupOf(DEFAULT_SHAPING, 'gmail.com', ['gmail-smtp-in.l.google.com'], { smarthost: true }).name,
    ).toBe('smarthost');
  });

  it("gives a shipped group's limits", () => {
    expect(group('gmail.com', ['gmail-smtp-in.l.google.com']).limits).toEqual({
      connections: 5,
      messagesPerConnection: 50,
      perMinute: 200,
      perHour: 6000,
    });
  });
});

describe('replyAction', () => {
  const google = group('gmail.com', ['gmail-smtp-in.l.google.com']);
  const microsoft = group('outlook.com', ['outlook-com.olc.protection.outlook.com']);
  const yahoo = group('yahoo.com', ['mta5.am0.yahoodns.net']);
  const other = group('example.org', ['mx.example.org']);

  it('given Gmail 421 4.7.28, pauses Google for 15 minutes', () => {
    const reply = refused(
      '421-4.7.28 Gmail has detected an unusual rate of unsolicited mail originating from your IP address. To protect our users from spam, mail sent from your IP address has been temporarily rate limited.',
    );
    expect(replyAction(reply, google)).toMatchObject({ kind: 'pause', forMs: 15 * 60_000 });
  });

  it('given Gmail 421 4.7.0 "unusual rate", halves Google', () => {
    const reply = refused(
      '421 4.7.0 Our system has detected an unusual rate of unsolicited mail originating from your IP address.',
    );
    expect(replyAction(reply, google).kind).toBe('halve');
  });

  it('given Microsoft 451 4.7.500 Server busy, pauses Microsoft for 10 minutes', () => {
    const reply = refused('451 4.7.500 Server busy. Please try again later from [203.0.113.10]. (S77714)');
    expect(replyAction(reply, microsoft)).toMatchObject({ kind: 'pause', forMs: 10 * 60_000 });
  });

  it('given Microsoft RP-001, halves Microsoft', () => {
    const reply = refused(
      '421 RP-001 The sending IP exceeded a rate limit related to IP or domain reputation.',
    );
    expect(replyAction(reply, microsoft).kind).toBe('halve');
  });

  it('given Yahoo [TSS04], halves Yahoo; given [TSS09], pauses it for an hour', () => {
    const tss04 = refused(
      '421 4.7.0 [TSS04] Messages from 203.0.113.10 temporarily deferred due to unexpected volume or user complaints - 4.16.55.1',
    );
    const tss09 = refused(
      '421 4.7.0 [TSS09] All messages from 203.0.113.10 will be permanently deferred; Retrying will NOT succeed.',
    );
    expect(replyAction(tss04, yahoo).kind).toBe('halve');
    expect(replyAction(tss09, yahoo)).toMatchObject({ kind: 'pause', forMs: 60 * 60_000 });
  });

  it('given a rate_limited reply no rule names, backs the group off', () => {
    const reply = refused('421 4.7.0 Too many messages, slow down');
    expect(reply.classification).toBe('rate_limited');
    expect(replyAction(reply, other).kind).toBe('backoff');
    expect(replyAction(refused('421 4.7.28 rate limited'), other).kind).toBe('backoff');
  });

  it.each([
    [
      '550 5.7.1 Service unavailable; client [203.0.113.10] blocked using Spamhaus',
      'spam_or_reputation_block',
    ],
    ['550 5.7.606 Access denied, banned sending IP [203.0.113.10].', 'spam_or_reputation_block'],
    [
      '550-5.7.26 This mail is unauthenticated, which poses a security risk to the sender and Gmail users',
      'authentication_failure',
    ],
  ])('given a block no rule names (%s), halves the group', (text, classification) => {
    const reply = refused(text);
    expect(reply.classification).toBe(classification);
    expect(replyAction(reply, other)).toEqual({ kind: 'halve' });
  });

  it('given a reply that is no slow-down, or a delivery, changes nothing', () => {
    expect(replyAction(refused('550 5.1.1 user unknown'), google).kind).toBe('none');
    expect(replyAction(refused('451 4.3.0 temporary local problem'), google).kind).toBe('none');
    const delivered: ShapingReply = {
      smtpCode: 250,
      smtpResponse: '250 2.0.0 OK unusual rate',
      classification: 'unknown',
      result: 'delivered',
    };
    expect(replyAction(delivered, google).kind).toBe('none');
  });

  it('given a rule with both a status and a match, needs both', () => {
    const both = { replies: [{ status: '4.7.*', match: 'busy', action: 'halve' as const }] };
    expect(replyAction(refused('451 4.7.1 mailbox busy'), both).kind).toBe('halve');
    expect(replyAction(refused('451 4.3.1 mailbox busy'), both).kind).toBe('none');
    expect(replyAction(refused('451 4.7.1 go away'), both).kind).toBe('none');
  });
});

describe('back-off curve', () => {
  it('is 1 minute at level 1, doubling per level, capped at 1 hour', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7, 20].map((l) => backoffMs(l) / 60_000)).toEqual([
      0, 1, 2, 4, 8, 16, 32, 60, 60,
    ]);
  });
});

describe('rate factor recovery', () => {
  it('given a halved factor, doubles it back per quiet hour, up to 1', () => {
    const halvedAt = new Date('2026-01-01T00:00:00Z');
    const at = (minutes: number) => new Date(halvedAt.getTime() + minutes * 60_000);
    expect(effectiveFactor(1 / 16, halvedAt, at(59))).toBe(1 / 16);
    expect(effectiveFactor(1 / 16, halvedAt, at(60))).toBe(1 / 8);
    expect(effectiveFactor(1 / 16, halvedAt, at(150))).toBe(1 / 4);
    expect(effectiveFactor(1 / 16, halvedAt, at(600))).toBe(1);
    expect(effectiveFactor(1, null, at(0))).toBe(1);
  });
});
