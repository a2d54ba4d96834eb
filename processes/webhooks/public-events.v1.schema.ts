import { z } from 'zod';
import { BOUNCE_CLASSES } from '../../domain/emails/bounce-classes.ts';
import type { PublicEventType } from '../../domain/webhooks/event-types.ts';
import type { WebhookPayload } from '../../platform/http/openapi.ts';

/**
 * The schemas of the public webhook payloads, version 1: `public-events.v1.ts` builds each `data` typed by these,
 * so the document (`webhooks` of GET /v1/openapi.json) and what is sent cannot drift apart.
 */
const timestamp = z.iso.datetime();

/** What every email event repeats about its email. */
const emailBase = {
  email_id: z.string(),
  from: z.string().nullable(),
  to: z.array(z.string()),
  subject: z.string().nullable(),
  tags: z.array(z.string()),
  timestamp,
};
const withRecipient = { ...emailBase, recipient: z.string() };

export const EmailEventData = z.strictObject(emailBase);
export const RecipientEventData = z.strictObject(withRecipient);
export const BouncedData = z.strictObject({
  ...withRecipient,
  bounce: z.strictObject({
    type: z.enum(['hard', 'soft']),
    classification: z.enum(BOUNCE_CLASSES).meta({ description: 'Why the server refused: docs/bounces.md' }),
    smtp_code: z.int().nullable(),
    message: z.string().nullable(),
  }),
});
export const DelayedData = z.strictObject({
  ...withRecipient,
  delay: z.strictObject({
    classification: z.enum(BOUNCE_CLASSES).meta({
      description:
        'Why delivery is delayed, in the classes of bounces (`rate_limited`, `mailbox_full`, `transient`, …): docs/bounces.md',
    }),
  }),
});
/** Kept, as a nullable string, for receivers written for it; always null: who opened or clicked is not sent. */
const userAgent = z.string().nullable().meta({
  description:
    'Always null: the opener’s client is personal data and never sent; see `GET /v1/emails/{id}/events`.',
});
export const OpenedData = z.strictObject({
  ...emailBase,
  open: z.strictObject({ user_agent: userAgent }),
});
export const ClickedData = z.strictObject({
  ...emailBase,
  click: z.strictObject({ link: z.string(), user_agent: userAgent }),
});
export const DomainVerifiedData = z.strictObject({
  domain_id: z.string(),
  name: z.string(),
  status: z.literal('verified'),
  timestamp,
});
export const DomainDnsChangedData = z.strictObject({
  domain_id: z.string(),
  name: z.string(),
  status: z.enum(['pending', 'verified', 'partially_verified', 'failed']).nullable(),
  records: z.array(
    z.strictObject({
      type: z.enum(['TXT', 'MX', 'CNAME']),
      name: z.string(),
      purpose: z.enum(['dkim', 'spf', 'return_path', 'dmarc', 'tracking', 'inbound']),
      expected: z.string(),
      found: z.array(z.string()).nullable(),
    }),
  ),
  timestamp,
});
const mailbox = z.strictObject({ email: z.string(), name: z.string().nullable() });
export const ReceivedData = z.strictObject({
  received_email_id: z.string(),
  domain: z.string().nullable(),
  from: mailbox.nullable(),
  to: z.array(mailbox),
  cc: z.array(mailbox),
  envelope: z.strictObject({ from: z.string(), to: z.array(z.string()) }),
  subject: z.string().nullable(),
  message_id: z.string().nullable(),
  attachments: z.array(
    z.strictObject({ id: z.string(), filename: z.string(), content_type: z.string(), size: z.int() }),
  ),
  spam_score: z.number(),
  is_spam: z.boolean(),
  timestamp,
});
export const ContactChangedData = z.strictObject({
  contact_id: z.string(),
  unsubscribed: z.boolean(),
  timestamp,
});
export const ContactDeletedData = z.strictObject({ contact_id: z.string(), timestamp });
export const ContactUnsubscribedData = z.strictObject({
  contact_id: z.string(),
  topic_id: z.string().nullable(),
  broadcast_id: z
    .string()
    .nullable()
    .meta({ description: 'The broadcast whose unsubscribe link was followed; null for any other way.' }),
  email_id: z.string().nullable().meta({
    description:
      'The email whose unsubscribe link (its page, or its mailto) was used: a broadcast’s, or a send about a topic; null for any other way.',
  }),
  timestamp,
});

const DATA: Record<PublicEventType, [z.ZodObject, string]> = {
  'email.sent': [EmailEventData, 'An email left Postline for its recipients’ servers'],
  'email.delivered': [RecipientEventData, 'A recipient’s server accepted the email'],
  'email.delivery_delayed': [DelayedData, 'Delivery to a recipient failed for now and will be tried again'],
  'email.bounced': [BouncedData, 'A recipient’s server refused the email'],
  'email.complained': [RecipientEventData, 'A recipient marked the email as spam'],
  'email.opened': [OpenedData, 'The email was opened (open tracking)'],
  'email.clicked': [ClickedData, 'A link in the email was clicked (click tracking)'],
  'email.canceled': [EmailEventData, 'A scheduled email was canceled'],
  'email.received': [ReceivedData, 'An email arrived for one of your inbound domains'],
  'contact.created': [ContactChangedData, 'A contact was created'],
  'contact.updated': [ContactChangedData, 'A contact was changed'],
  'contact.deleted': [ContactDeletedData, 'A contact and its personal data were deleted'],
  'contact.unsubscribed': [
    ContactUnsubscribedData,
    'A contact unsubscribed (from a topic, or from everything)',
  ],
  'domain.verified': [DomainVerifiedData, 'A domain’s required DNS records were all found'],
  'domain.dns_changed': [DomainDnsChangedData, 'A check found a domain’s DNS records changed'],
};

/** The envelope every delivery carries: `id` is the delivery id (`whl_…`), stable across retries. */
const envelope = (type: string, data: z.ZodObject) =>
  z
    .strictObject({ type: z.literal(type), id: z.string(), created_at: timestamp, data })
    .meta({ id: `Webhook_${type.replace('.', '_')}` });

/** `webhook.test`: sent once to a new endpoint, so its owner sees signatures verify (`testEventData`). */
export const TestEventData = z.strictObject({ webhook_id: z.string(), message: z.string() });

export const WEBHOOK_PAYLOADS: WebhookPayload[] = [
  ...Object.entries(DATA).map(([type, [data, summary]]) => ({
    type,
    summary,
    payload: envelope(type, data),
  })),
  {
    type: 'webhook.test',
    summary: 'Sent once to a new endpoint: answer 2xx once the signature verifies',
    payload: envelope('webhook.test', TestEventData),
  },
];
