import { z } from 'zod';
import { downloadLinkFields, listOf, timestamp } from '../../platform/http/route-schema.ts';
import { EMAIL_STATUSES } from '../../write-side/emails/status.ts';

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
  last_event: z.string(),
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

/** One event of an email's stream, for auditors. */
const EmailEvent = z.strictObject({
  revision: z.int(),
  type: z.string(),
  created_at: timestamp,
  actor: z.string(),
  data: z.record(z.string(), z.unknown()),
});
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
    plan: z.string(),
    emails: z.int(),
    included: z.int(),
    overage: z.int(),
    overage_cost_eur: z.number().nullable(),
  })
  .meta({ id: 'Usage' });
