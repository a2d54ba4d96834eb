import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '../../platform/eventstore/types.ts';
import {
  envelope,
  LIVE_EVENT_TYPES,
  publicData,
  summaryOf,
} from '../../processes/webhooks/public-events.v1.ts';
import { isSubscribable, subscriptionMatches } from '../../write-side/webhooks/event-types.ts';

const stored = (type: string, data: any): StoredEvent => ({
  type,
  data,
  metadata: { orgId: 'org_1', mode: 'live', actor: 'system' },
  streamId: `email-${data.emailId}`,
  revision: 1,
  position: '1',
  createdAt: new Date('2026-01-01T00:00:00Z'),
});
const email = { from: 'Acme <hi@acme.test>', to: ['a@x.test'], subject: 'Hello', tags: ['welcome'] };
const base = { email_id: 'em_1', ...email };

describe('public webhook events (v1)', () => {
  it('matches exact types, email.* and *', () => {
    expect(subscriptionMatches(['email.bounced'], 'email.bounced')).toBe(true);
    expect(subscriptionMatches(['email.bounced'], 'email.sent')).toBe(false);
    expect(subscriptionMatches(['email.*'], 'email.sent')).toBe(true);
    expect(subscriptionMatches(['email.*'], 'domain.verified')).toBe(false);
    expect(subscriptionMatches(['*'], 'domain.verified')).toBe(true);
    expect(isSubscribable('email.sent')).toBe(true);
    expect(isSubscribable('contact.*')).toBe(false);
    expect(isSubscribable('EmailSent')).toBe(false);
  });

  it('takes from/to/subject/tags from the email stream first event', () => {
    const queued = stored('EmailQueued', { emailId: 'em_1', ...email, cc: [], html: '<p>secret body</p>' });
    expect(summaryOf([queued])).toEqual(email);
  });

  it('maps email events to public data, with bounce, click and open details', () => {
    expect(publicData(stored('EmailSent', { emailId: 'em_1', messageId: 'm', sentAt: 'T1' }), email)).toEqual(
      { ...base, timestamp: 'T1' },
    );
    expect(
      publicData(
        stored('EmailBounced', {
          emailId: 'em_1',
          recipient: 'a@x.test',
          bounceType: 'hard',
          smtpCode: 550,
          smtpResponse: '550 no such user',
          bouncedAt: 'T2',
        }),
        email,
      ),
    ).toEqual({
      ...base,
      timestamp: 'T2',
      recipient: 'a@x.test',
      bounce: { type: 'hard', smtp_code: 550, message: '550 no such user' },
    });
    expect(
      publicData(
        stored('EmailClicked', {
          emailId: 'em_1',
          link: 'https://x.test',
          userAgent: 'UA',
          ip: '1.2.3.4',
          clickedAt: 'T3',
        }),
        email,
      ),
    ).toEqual({ ...base, timestamp: 'T3', click: { link: 'https://x.test', user_agent: 'UA' } });
    expect(
      publicData(
        stored('EmailOpened', { emailId: 'em_1', userAgent: 'UA', ip: '1.2.3.4', openedAt: 'T4' }),
        email,
      ),
    ).toEqual({
      ...base,
      timestamp: 'T4',
      open: { user_agent: 'UA' },
    });
  });

  it('never leaks internal fields (ip addresses, bodies)', () => {
    const data = publicData(
      stored('EmailOpened', { emailId: 'em_1', userAgent: 'UA', ip: '1.2.3.4', openedAt: 'T4' }),
      email,
    );
    expect(JSON.stringify(data)).not.toContain('1.2.3.4');
  });

  it('maps domain events', () => {
    expect(
      publicData(stored('DomainVerified', { domainId: 'dom_1', name: 'acme.test', verifiedAt: 'T5' })),
    ).toEqual({
      domain_id: 'dom_1',
      name: 'acme.test',
      status: 'verified',
      timestamp: 'T5',
    });
  });

  it('has no public form for internal-only events', () => {
    expect(publicData(stored('EmailQueued', { emailId: 'em_1' }))).toBeNull();
    expect(LIVE_EVENT_TYPES).not.toContain('contact.created');
  });

  it('maps a received email to email.received: metadata and the spam verdict, never the bodies', () => {
    const none = { result: 'none', detail: null };
    const data = publicData(
      stored('InboundEmailReceived', {
        receivedEmailId: 'in_1',
        orgId: 'org_1',
        mode: 'live',
        domainId: 'dom_1',
        domain: 'acme.test',
        envelope: {
          mailFrom: 'ann@x.test',
          rcptTo: ['help@acme.test'],
          remoteAddress: '192.0.2.1',
          helo: 'x',
        },
        from: { email: 'ann@x.test', name: 'Ann' },
        to: [{ email: 'help@acme.test', name: null }],
        cc: [],
        replyTo: [],
        subject: 'Help',
        messageId: '<1@x.test>',
        inReplyTo: null,
        rawKey: 'blob_1',
        size: 100,
        contentKey: 'blob_2',
        attachments: [
          {
            attachmentId: 'att_1',
            filename: 'a.txt',
            contentType: 'text/plain',
            contentId: null,
            size: 3,
            blobKey: 'blob_3',
          },
        ],
        authentication: { spf: none, dkim: none, dmarc: none, arc: none },
        spamScore: 1.5,
        isSpam: false,
        parseError: null,
        receivedAt: 'T9',
      }),
    );
    expect(data).toEqual({
      received_email_id: 'in_1',
      domain: 'acme.test',
      from: { email: 'ann@x.test', name: 'Ann' },
      to: [{ email: 'help@acme.test', name: null }],
      cc: [],
      envelope: { from: 'ann@x.test', to: ['help@acme.test'] },
      subject: 'Help',
      message_id: '<1@x.test>',
      attachments: [{ id: 'att_1', filename: 'a.txt', content_type: 'text/plain', size: 3 }],
      spam_score: 1.5,
      is_spam: false,
      timestamp: 'T9',
    });
    expect(LIVE_EVENT_TYPES).toContain('email.received');
  });

  it('wraps data in the envelope', () => {
    expect(JSON.parse(envelope('email.sent', 'whl_1', new Date('2026-01-01T00:00:00Z'), { a: 1 }))).toEqual({
      type: 'email.sent',
      id: 'whl_1',
      created_at: '2026-01-01T00:00:00.000Z',
      data: { a: 1 },
    });
  });
});
