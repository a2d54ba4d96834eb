import { z } from 'zod';
import { downloadLinkFields, listOf, timestamp } from '../../platform/http/route-schema.ts';

const mailbox = z.strictObject({ email: z.string(), name: z.string().nullable() });
const verdict = z.strictObject({ result: z.string(), detail: z.string().nullable() });

const attachment = {
  object: z.literal('received_attachment'),
  id: z.string(),
  received_email_id: z.string(),
  filename: z.string(),
  content_type: z.string(),
  content_id: z.string().nullable(),
  size: z.int(),
};
const ReceivedEmailHeader = z
  .strictObject({ name: z.string(), value: z.string() })
  .meta({ id: 'ReceivedEmailHeader', description: 'A header: its name in lower case, its value unfolded.' });

const ReceivedAttachmentSummary = z.strictObject(attachment).meta({ id: 'ReceivedAttachmentSummary' });

export const ReceivedEmail = z
  .strictObject({
    object: z.literal('received_email'),
    id: z.string(),
    from: mailbox.nullable(),
    to: z.array(mailbox),
    cc: z.array(mailbox),
    reply_to: z.array(mailbox),
    subject: z.string().nullable(),
    text_body: z.string().nullable(),
    html_body: z.string().nullable(),
    headers: z.record(z.string(), z.string()).meta({
      description:
        'Each header name (lower case) with its value; a header that appears more than once (`received`) has its values joined in order with "\\n". Kept after the retention ends.',
    }),
    header_list: z.array(ReceivedEmailHeader).meta({
      description:
        'Every header in the order of the message, each repeat on its own. Kept after the retention ends.',
    }),
    message_id: z.string().nullable(),
    in_reply_to: z.string().nullable(),
    spam_score: z.number(),
    is_spam: z.boolean(),
    authentication: z.strictObject({ spf: verdict, dkim: verdict, dmarc: verdict, arc: verdict }),
    attachment_count: z.int(),
    attachments: z.array(ReceivedAttachmentSummary),
    domain: z.string().nullable(),
    envelope: z.strictObject({ from: z.string(), to: z.array(z.string()) }),
    size: z.int(),
    parse_error: z.string().nullable(),
    created_at: timestamp,
    purged_at: timestamp.nullable(),
  })
  .meta({ id: 'ReceivedEmail' });

export const ReceivedEmailList = listOf(ReceivedEmail, 'ReceivedEmailList');
export const ReceivedAttachmentList = listOf(ReceivedAttachmentSummary, 'ReceivedAttachmentList');
export const ReceivedAttachment = z
  .strictObject({ ...attachment, ...downloadLinkFields })
  .meta({ id: 'ReceivedAttachment' });

export const RawMessage = z
  .strictObject({
    object: z.literal('raw_message'),
    received_email_id: z.string(),
    size: z.int(),
    ...downloadLinkFields,
  })
  .meta({ id: 'RawMessage' });
