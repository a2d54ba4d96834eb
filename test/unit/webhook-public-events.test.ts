import { describe, expect, it } from 'vitest';
import { publicEmailEventType } from '../../domain/emails/public-event-types.ts';
import { isSubscribable, subscriptionMatches } from '../../domain/webhooks/event-types.ts';
import type { StoredEvent } from '../../platform/eventstore/types.ts';
import {
  envelope,
  LIVE_EVENT_TYPES,
  PUBLIC_TYPE_OF,
  publicData,
  summaryOf,
} from '../../processes/webhooks/public-events.v1.ts';
import { receivedEmail } from '../fixtures/received-email.ts';

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
      bounce: {
        type: 'hard',
        classification: 'invalid_recipient',
        smtp_code: 550,
        message: '550 no such user',
      },
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
    ).toEqual({ ...base, timestamp: 'T3', click: { link: 'https://x.test', user_agent: null } });
    expect(
      publicData(
        stored('EmailOpened', { emailId: 'em_1', userAgent: 'UA', ip: '1.2.3.4', openedAt: 'T4' }),
        email,
      ),
    ).toEqual({
      ...base,
      timestamp: 'T4',
      open: { user_agent: null },
    });
    expect(
      publicData(stored('EmailOpened', { emailId: 'em_1', client: 'pd1.sealed', openedAt: 'T4' }), email),
    ).toEqual({ ...base, timestamp: 'T4', open: { user_agent: null } });
  });

  it('never leaks internal or personal fields (ip addresses, user agents, sealed data, bodies)', () => {
    for (const e of [
      stored('EmailOpened', { emailId: 'em_1', userAgent: 'UA/1', ip: '1.2.3.4', openedAt: 'T4' }),
      stored('EmailClicked', { emailId: 'em_1', link: 'https://x.test', client: 'pd1.s', clickedAt: 'T4' }),
    ]) {
      const text = JSON.stringify(publicData(e, email));
      for (const leak of ['1.2.3.4', 'UA/1', 'pd1.s', 'org_']) expect(text).not.toContain(leak);
    }
  });

  it('names every email event as the email history does', () => {
    for (const [internal, type] of Object.entries(PUBLIC_TYPE_OF)) {
      if (!type.startsWith('email.') || internal === 'InboundEmailReceived') continue;
      expect(publicEmailEventType(internal), internal).toBe(type);
    }
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
    expect(publicData(stored('ContactEmailClaimed', { contactId: 'con_1' }))).toBeNull();
  });

  it('maps a received email to email.received: metadata and the spam verdict, never the bodies', () => {
    const data = publicData(stored('InboundEmailReceived', receivedEmail));
    expect(data).toEqual({
      received_email_id: 'in_1',
      domain: 'acme.test',
      from: { email: 'ann@remote.test', name: 'Ann' },
      to: [{ email: 'support@acme.test', name: null }],
      cc: [],
      envelope: { from: 'ann@remote.test', to: ['support@acme.test'] },
      subject: 'Help',
      message_id: '<1@remote.test>',
      attachments: [{ id: 'att_1', filename: 'a.pdf', content_type: 'application/pdf', size: 10 }],
      spam_score: 1,
      is_spam: false,
      timestamp: '2026-05-01T10:00:00.000Z',
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
