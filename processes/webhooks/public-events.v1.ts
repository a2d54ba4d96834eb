import type { z } from 'zod';
import type { ContactEvent } from '../../domain/contacts/contact.events.ts';
import type { DomainEvent } from '../../domain/domains/domain.events.ts';
import { classOfBounce, classOfDelay } from '../../domain/emails/bounce-classes.ts';
import type { EmailEvent } from '../../domain/emails/email.events.ts';
import { PUBLIC_EMAIL_EVENT_TYPE } from '../../domain/emails/public-event-types.ts';
import type { InboundEmailReceived } from '../../domain/received-emails/received-email.events.ts';
import {
  PUBLIC_EVENT_TYPES,
  type PublicEventType,
  TEST_EVENT_TYPE,
} from '../../domain/webhooks/event-types.ts';
import { isOneOf, type Stored, type StoredEvent } from '../../platform/eventstore/types.ts';
import type {
  BouncedData,
  ClickedData,
  ContactChangedData,
  ContactDeletedData,
  ContactUnsubscribedData,
  DelayedData,
  DomainDnsChangedData,
  DomainVerifiedData,
  EmailEventData,
  OpenedData,
  ReceivedData,
  RecipientEventData,
  TestEventData,
} from './public-events.v1.schema.ts';

// Each payload below `satisfies` its schema's type (public-events.v1.schema.ts), which the OpenAPI document shows.
type Of<S extends z.ZodType> = z.output<S>;

/**
 * The public webhook payloads, version 1: the contract receivers code against. Internal events may gain fields
 * or be renamed; only this file decides what leaves the service. A breaking change to a payload gets a new
 * version of this file rather than an edit here.
 *
 * Envelope: `{type, id, created_at, data}`; `id` is the delivery id (`whl_…`), stable across retries.
 */
/**
 * An email event's webhook type is its public name (domain/emails/public-event-types.ts), where a webhook of that
 * name exists: `email.queued` and the like are in the email's history but have no webhook.
 */
const EMAIL_WEBHOOK_TYPES = Object.fromEntries(
  Object.entries(PUBLIC_EMAIL_EVENT_TYPE).filter(([, type]) =>
    (PUBLIC_EVENT_TYPES as readonly (string | null)[]).includes(type),
  ),
) as Record<string, PublicEventType>;

/** Which internal event feeds which public type. Types not listed here have no source yet (see docs/webhooks.md). */
export const PUBLIC_TYPE_OF: Record<string, PublicEventType> = {
  ...EMAIL_WEBHOOK_TYPES,
  InboundEmailReceived: 'email.received',
  ContactCreated: 'contact.created',
  ContactUpdated: 'contact.updated',
  ContactDeleted: 'contact.deleted',
  ContactUnsubscribed: 'contact.unsubscribed',
  DomainVerified: 'domain.verified',
  DomainDnsChanged: 'domain.dns_changed',
};

export const LIVE_EVENT_TYPES = [...new Set(Object.values(PUBLIC_TYPE_OF))];

/** What every email event repeats about its email, from the email's first event (EmailQueued or EmailScheduled). */
export interface EmailSummary {
  from: string;
  to: string[];
  subject: string;
  tags: string[];
}

/** The email events that feed a public type: each has its `emailId`, and needs its email's summary. */
const EMAIL_SOURCES = Object.keys(PUBLIC_TYPE_OF).filter(
  (t) => PUBLIC_TYPE_OF[t].startsWith('email.') && t !== 'InboundEmailReceived',
) as EmailEvent['type'][];
/** The domain events that feed a public type. */
const DOMAIN_SOURCES = Object.keys(PUBLIC_TYPE_OF).filter((t) =>
  PUBLIC_TYPE_OF[t].startsWith('domain.'),
) as DomainEvent['type'][];

export const isEmailSourced = (e: StoredEvent): e is Stored<EmailEvent> =>
  isOneOf<EmailEvent>(e, EMAIL_SOURCES);

type FirstEmailEvent = Extract<EmailEvent, { type: 'EmailQueued' | 'EmailScheduled' }>;

/** Whether `e` is an email's first event, which carries its summary. */
export const isFirstEmailEvent = (e: StoredEvent): e is Stored<FirstEmailEvent> =>
  isOneOf<FirstEmailEvent>(e, ['EmailQueued', 'EmailScheduled']);

export function summaryOf(stream: StoredEvent[]): EmailSummary | null {
  const first = stream.find(isFirstEmailEvent);
  if (!first) return null;
  const d = first.data;
  return { from: d.from, to: d.to ?? [], subject: d.subject ?? '', tags: d.tags ?? [] };
}

function emailData(e: EmailEvent, email: EmailSummary | null): Record<string, unknown> | null {
  const base = (timestamp: string): Of<typeof EmailEventData> => ({
    email_id: e.data.emailId,
    from: email?.from ?? null,
    to: email?.to ?? [],
    subject: email?.subject ?? null,
    tags: email?.tags ?? [],
    timestamp,
  });
  const toRecipient = (timestamp: string, recipient: string): Of<typeof RecipientEventData> => ({
    ...base(timestamp),
    recipient,
  });
  switch (e.type) {
    case 'EmailSent':
      return base(e.data.sentAt);
    case 'EmailDelivered':
      return toRecipient(e.data.deliveredAt, e.data.recipient);
    case 'EmailDeliveryDelayed':
    case 'EmailDelayReported': {
      const at = e.type === 'EmailDeliveryDelayed' ? e.data.delayedAt : e.data.reportedAt;
      return {
        ...toRecipient(at, e.data.recipient),
        delay: { classification: classOfDelay(e.data) },
      } satisfies Of<typeof DelayedData>;
    }
    case 'EmailBounced':
      return {
        ...toRecipient(e.data.bouncedAt, e.data.recipient),
        bounce: {
          type: e.data.bounceType,
          classification: classOfBounce(e.data),
          smtp_code: e.data.smtpCode,
          message: e.data.smtpResponse,
        },
      } satisfies Of<typeof BouncedData>;
    case 'EmailComplained':
      return toRecipient(e.data.complainedAt, e.data.recipient);
    // Who opened or clicked is personal data, and the outbox keeps a payload after its key is erased: the
    // payloads never carry it (`user_agent` stays, always null, so receivers written for it still parse).
    case 'EmailOpened':
      return { ...base(e.data.openedAt), open: { user_agent: null } } satisfies Of<typeof OpenedData>;
    case 'EmailClicked':
      return {
        ...base(e.data.clickedAt),
        click: { link: e.data.link, user_agent: null },
      } satisfies Of<typeof ClickedData>;
    case 'EmailCanceled':
      return base(e.data.canceledAt);
    default:
      return null;
  }
}

function domainData(e: DomainEvent): Record<string, unknown> | null {
  switch (e.type) {
    case 'DomainVerified':
      return {
        domain_id: e.data.domainId,
        name: e.data.name,
        status: 'verified',
        timestamp: e.data.verifiedAt,
      } satisfies Of<typeof DomainVerifiedData>;
    case 'DomainDnsChanged':
      return {
        domain_id: e.data.domainId,
        name: e.data.name,
        status: e.data.status ?? null,
        records: (e.data.records ?? []).map((r) => ({
          type: r.type,
          name: r.name,
          purpose: r.purpose,
          expected: r.expected,
          found: r.found,
        })),
        timestamp: e.data.detectedAt,
      } satisfies Of<typeof DomainDnsChangedData>;
    default:
      return null;
  }
}

/** `email.received`: what arrived and for whom, the attachments' metadata and the spam verdict (not the bodies). */
function receivedData(e: InboundEmailReceived): Record<string, unknown> {
  const d = e.data;
  return {
    received_email_id: d.receivedEmailId,
    domain: d.domain,
    from: d.from,
    to: d.to,
    cc: d.cc,
    envelope: { from: d.envelope.mailFrom, to: d.envelope.rcptTo },
    subject: d.subject,
    message_id: d.messageId,
    attachments: d.attachments.map((a) => ({
      id: a.attachmentId,
      filename: a.filename,
      content_type: a.contentType,
      size: a.size,
    })),
    spam_score: d.spamScore,
    is_spam: d.isSpam,
    timestamp: d.receivedAt,
  } satisfies Of<typeof ReceivedData>;
}

/**
 * `contact.*`: which contact and when, never its personal data (the outbox would keep it after the contact is
 * deleted): fetch the contact with `GET /v1/contacts/{contact_id}`.
 */
function contactData(e: ContactEvent): Record<string, unknown> | null {
  switch (e.type) {
    case 'ContactCreated':
    case 'ContactUpdated':
      return {
        contact_id: e.data.contactId,
        unsubscribed: e.data.unsubscribed,
        timestamp: e.type === 'ContactCreated' ? e.data.createdAt : e.data.updatedAt,
      } satisfies Of<typeof ContactChangedData>;
    case 'ContactDeleted':
      return { contact_id: e.data.contactId, timestamp: e.data.deletedAt } satisfies Of<
        typeof ContactDeletedData
      >;
    case 'ContactUnsubscribed':
      return {
        contact_id: e.data.contactId,
        topic_id: e.data.topicId ?? null,
        broadcast_id: e.data.broadcastId ?? null,
        email_id: e.data.emailId ?? null,
        timestamp: e.data.unsubscribedAt,
      } satisfies Of<typeof ContactUnsubscribedData>;
    default:
      return null;
  }
}

/** The public `data` of a source event, or null when it has none. Email events need their email's summary. */
export function publicData(
  event: StoredEvent,
  email: EmailSummary | null = null,
): Record<string, unknown> | null {
  if (isEmailSourced(event)) return emailData(event, email);
  if (isOneOf<DomainEvent>(event, DOMAIN_SOURCES)) return domainData(event);
  if (isOneOf<InboundEmailReceived>(event, ['InboundEmailReceived'])) return receivedData(event);
  if (
    isOneOf<ContactEvent>(event, [
      'ContactCreated',
      'ContactUpdated',
      'ContactDeleted',
      'ContactUnsubscribed',
    ])
  )
    return contactData(event);
  return null;
}

export const testEventData = (webhookId: string): Of<typeof TestEventData> => ({
  webhook_id: webhookId,
  message: 'Postline can reach this endpoint. Verify the signature with your signing secret and answer 2xx.',
});

/** The exact bytes that are signed and sent, every attempt. */
export const envelope = (type: string, id: string, createdAt: Date, data: Record<string, unknown>): string =>
  JSON.stringify({ type, id, created_at: createdAt.toISOString(), data });

export { TEST_EVENT_TYPE };
