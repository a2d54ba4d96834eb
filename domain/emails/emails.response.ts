import { z } from 'zod';
import { downloadLinkFields, listOf, timestamp } from '../../platform/http/route-schema.ts';
import { BOUNCE_CLASSES } from './bounce-classes.ts';
import { EMAIL_HISTORY_TYPES, type EmailHistoryType } from './public-event-types.ts';
import { EMAIL_STATUSES } from './status.ts';

const status = z.enum(EMAIL_STATUSES as [string, ...string[]]);

/** An email as listed (`toApiEmail` in emails.queries.ts, without its content). */
const summary = {
  object: z.literal('email'),
  id: z.string(),
  status,
  from: z.string(),
  to: z.array(z.string()),
  cc: z.array(z.string()),
  bcc: z.array(z.string()),
  reply_to: z.array(z.string()),
  subject: z.string(),
  tags: z.array(z.string()),
  domain_id: z.string().nullable(),
  domain: z.string(),
  template_id: z.string().nullable(),
  send_at: timestamp.nullable(),
  created_at: timestamp,
  last_event: z.enum(EMAIL_HISTORY_TYPES).meta({
    description: 'The public name of the email’s latest event (as in `GET /v1/emails/{id}/events`).',
  }),
  last_event_at: timestamp,
};

export const EmailSummary = z.strictObject(summary).meta({ id: 'EmailSummary' });

const Recipient = z.strictObject({
  email: z.string(),
  status: z.enum(['pending', 'delayed', 'delivered', 'bounced', 'complained']),
  attempts: z.int(),
  smtp_code: z.int().nullable(),
  smtp_response: z.string().nullable(),
  bounce_type: z.enum(['hard', 'soft']).nullable(),
  classification: z.enum(BOUNCE_CLASSES).nullable().meta({
    description:
      'For a bounced recipient: why its server refused; for a delayed one: why it was deferred (docs/bounces.md).',
  }),
  next_attempt_at: timestamp.nullable(),
  updated_at: timestamp,
});

export const Email = z
  .strictObject({
    ...summary,
    html: z.string().nullable(),
    text: z.string().nullable(),
    headers: z.record(z.string(), z.string()),
    template_version_id: z.string().nullable(),
    message_id: z.string().nullable(),
    suppressed_recipients: z.array(z.string()),
    topic_id: z.string().nullable().meta({
      description: 'The topic the email is about: the one its send or its broadcast named, if any.',
    }),
    unsubscribed_recipients: z.array(z.string()).meta({
      description: 'Recipients left out because the topic does not reach them (docs/emails.md, "Topics").',
    }),
    opens: z.int(),
    clicks: z.int(),
    recipients: z.array(Recipient),
  })
  .meta({ id: 'Email' });

export const EmailList = listOf(EmailSummary, 'EmailList');

/** What a send answers: the email's id and whether it is queued or scheduled. */
export const AcceptedEmail = z
  .strictObject({
    id: z.string(),
    status: z.enum(['queued', 'scheduled']),
    send_at: timestamp.optional(),
    suppressed_recipients: z.array(z.string()),
    unsubscribed_recipients: z.array(z.string()).optional().meta({
      description: 'With `topic_id`: the recipients left out because the topic does not reach them.',
    }),
  })
  .meta({
    id: 'AcceptedEmail',
    example: { id: 'em_01jx0m4qk3f5b8c9d2e6g7h8j9', status: 'queued', suppressed_recipients: [] },
  });

/** A batch answers item by item: an accepted email, or the error that item got. */
export const BatchResult = z
  .strictObject({
    data: z.array(
      z.union([
        AcceptedEmail,
        z.strictObject({
          error: z.strictObject({ type: z.string(), message: z.string(), code: z.string() }),
        }),
      ]),
    ),
  })
  .meta({ id: 'BatchResult' });

const smtpCode = z
  .int()
  .nullable()
  .meta({ description: 'The SMTP reply code; null when no server answered.' });
const clientDetails = {
  ip: z.string().nullable().meta({
    description:
      'The IP address the request came from: null unless the organization records client details (docs/emails.md).',
  }),
  user_agent: z.string().nullable().meta({
    description: 'The User-Agent header of the request: null unless the organization records client details.',
  }),
};

/** Each public event type's `data`, whether it concerns one recipient, and what it means. */
const HISTORY: Record<EmailHistoryType, { recipient: boolean; data: z.ZodRawShape; description: string }> = {
  'email.queued': { recipient: false, data: {}, description: 'The email was accepted for sending now.' },
  'email.scheduled': {
    recipient: false,
    data: { send_at: timestamp },
    description: 'The email was accepted for sending at `send_at`.',
  },
  'email.rescheduled': {
    recipient: false,
    data: { send_at: timestamp },
    description: 'A scheduled email got a new `send_at`.',
  },
  'email.released': { recipient: false, data: {}, description: 'A scheduled email fell due and was queued.' },
  'email.canceled': { recipient: false, data: {}, description: 'A scheduled email was canceled.' },
  'email.sending': { recipient: false, data: {}, description: 'Sending began.' },
  'email.sent': {
    recipient: false,
    data: { message_id: z.string() },
    description: 'The email left Postline, with this Message-ID.',
  },
  'email.delivered': {
    recipient: true,
    data: {
      attempt: z.int().min(1).meta({ description: 'The attempt that delivered, 1-based.' }),
      smtp_code: z.int(),
      smtp_response: z.string(),
      mx: z.string().nullable().meta({ description: 'The receiving server; null in test mode.' }),
      tls: z.boolean().nullable(),
    },
    description: 'The recipient’s server accepted the email.',
  },
  'email.delivery_delayed': {
    recipient: true,
    data: {
      source: z.enum(['attempt', 'report']).meta({
        description:
          '`attempt`: an attempt of Postline’s failed for now; `report`: the receiving side reported a delay.',
      }),
      attempt: z.int().nullable().meta({
        description:
          'The attempt that failed, 1-based; null for a report, and for a wait for a free connection to the destination (no attempt).',
      }),
      next_attempt_at: timestamp.nullable(),
      smtp_code: smtpCode,
      smtp_response: z.string(),
      classification: z.enum(BOUNCE_CLASSES).meta({
        description: 'Why it was deferred, in the classes of bounces (`rate_limited`, `transient`, …).',
      }),
    },
    description: 'Delivery to the recipient is delayed; it will be tried again.',
  },
  'email.bounced': {
    recipient: true,
    data: {
      bounce_type: z.enum(['hard', 'soft']),
      classification: z.enum(BOUNCE_CLASSES),
      smtp_code: smtpCode,
      smtp_response: z.string(),
    },
    description:
      'The recipient’s server refused the email: hard for a dead address, soft for any other refusal or when the attempts ran out; `classification` says why (docs/bounces.md).',
  },
  'email.complained': { recipient: true, data: {}, description: 'The recipient marked the email as spam.' },
  'email.opened': {
    recipient: false,
    data: clientDetails,
    description: 'The email was opened (open tracking).',
  },
  'email.clicked': {
    recipient: false,
    data: { link: z.string(), ...clientDetails },
    description: 'A link in the email was clicked (click tracking).',
  },
};

/** One event of an email's history: its public name, time, recipient (for the recipient's own events) and data. */
const EmailEvent = z
  .discriminatedUnion(
    'type',
    Object.entries(HISTORY).map(([type, h]) =>
      z
        .strictObject({
          object: z.literal('email_event'),
          type: z.literal(type),
          created_at: timestamp,
          recipient: h.recipient ? z.string() : z.null(),
          data: z.strictObject(h.data),
        })
        .meta({ id: `EmailEvent_${type.replace('.', '_')}`, description: h.description }),
    ) as unknown as [z.ZodObject, ...z.ZodObject[]],
  )
  .meta({ id: 'EmailEvent' });
export const EmailEventList = listOf(EmailEvent, 'EmailEventList');

const attachment = {
  object: z.literal('attachment'),
  id: z.string(),
  email_id: z.string(),
  filename: z.string(),
  content_type: z.string(),
  content_id: z.string().nullable(),
  size: z.int().meta({ description: 'Decoded size in bytes.' }),
};
export const AttachmentList = listOf(z.strictObject(attachment), 'AttachmentList');
export const Attachment = z.strictObject({ ...attachment, ...downloadLinkFields }).meta({ id: 'Attachment' });

export const Usage = z
  .strictObject({
    object: z.literal('usage'),
    month: z.string(),
    mode: z.enum(['live', 'test']),
    plan: z.string().meta({
      description:
        'The plan the month is figured on: the one in force at its end (the month under way: today’s).',
    }),
    emails: z.int(),
    included: z.int(),
    overage: z.int(),
    overage_cost_eur: z.number().nullable(),
  })
  .meta({ id: 'Usage' });
