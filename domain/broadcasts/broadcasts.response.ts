import { z } from 'zod';
import { listOf, timestamp } from '../../platform/http/route-schema.ts';

const count = z.int().min(0);

const broadcastFields = {
  object: z.literal('broadcast'),
  id: z.string(),
  name: z.string(),
  audience_id: z.string(),
  topic_id: z.string().nullable(),
  from: z.string(),
  reply_to: z.array(z.string()),
  subject: z.string().nullable(),
  html: z.string().nullable(),
  text: z.string().nullable(),
  template_id: z.string().nullable(),
  preview_text: z
    .string()
    .nullable()
    .meta({ description: 'The preheader an inbox shows after the subject.' }),
  status: z.enum(['draft', 'scheduled', 'sending', 'sent', 'canceled']),
  send_at: timestamp.nullable().meta({ description: 'When a scheduled broadcast starts sending.' }),
  progress: z
    .strictObject({
      contacts_processed: count.meta({ description: 'Contacts of the audience looked at so far.' }),
      skipped: z.strictObject({
        unsubscribed: count,
        suppressed: count,
        not_subscribed: count,
        quota_exceeded: count,
        render_failed: count,
      }),
    })
    .meta({ id: 'BroadcastProgress' }),
  created_at: timestamp,
  updated_at: timestamp,
  started_at: timestamp.nullable(),
  sent_at: timestamp.nullable(),
  canceled_at: timestamp.nullable(),
};

/** What became of a broadcast's emails, counted when it is read. */
const BroadcastCounts = z
  .strictObject({
    recipients: count.meta({ description: 'Contacts that were sent an email.' }),
    queued: count,
    sent: count,
    delivered: count,
    bounced: count,
    complained: count,
    canceled: count.meta({ description: 'Emails canceled before they went out: the broadcast was stopped.' }),
    opened: count,
    clicked: count,
    unsubscribed: count.meta({ description: 'Contacts that unsubscribed by the link in one of its emails.' }),
  })
  .meta({ id: 'BroadcastCounts' });

export const Broadcast = z
  .strictObject({ ...broadcastFields, counts: BroadcastCounts })
  .meta({ id: 'Broadcast' });

/** In a list: the recipients so far instead of the counts of its emails (read one for those). */
const BroadcastSummary = z
  .strictObject({ ...broadcastFields, recipients: count })
  .meta({ id: 'BroadcastSummary' });

export const BroadcastList = listOf(BroadcastSummary, 'BroadcastList');

/** What became of a broadcast's emails, as `GET /v1/broadcasts/{id}/recipients?type=` lists them (Resend's types). */
export const RECIPIENT_TYPES = [
  'sent',
  'delivered',
  'opened',
  'clicked',
  'bounced',
  'complained',
  'unsubscribed',
] as const;
export type RecipientType = (typeof RECIPIENT_TYPES)[number];
/** Resend's names of the bounce types: `permanent` is Postline's `hard`, `transient` its `soft`. */
export const BOUNCE_TYPES = { permanent: 'hard', transient: 'soft' } as const;

export const BroadcastRecipient = z
  .strictObject({
    id: z
      .string()
      .meta({ description: 'The email the recipient was sent (`em_…`): the cursor of the list.' }),
    contact_id: z.string().nullable().meta({ description: 'The contact, null once it is deleted.' }),
    email: z.string(),
    count: count.optional().meta({ description: 'With `opened` and `clicked`: how many times.' }),
    clicked_links: z.array(z.strictObject({ url: z.string(), clicks: count })).optional(),
    bounce_type: z.enum(['permanent', 'transient', 'undetermined']).optional(),
  })
  .meta({ id: 'BroadcastRecipient' });
export const BroadcastRecipientList = listOf(BroadcastRecipient, 'BroadcastRecipientList');

export const BroadcastClickedLink = z
  .strictObject({
    id: z.string().meta({ description: 'The link (`lnk_…`): the cursor of the list, nothing else.' }),
    url: z.string(),
    clicks: count,
    unique_clicks: count.meta({ description: 'The emails it was clicked in.' }),
  })
  .meta({ id: 'BroadcastClickedLink' });
export const BroadcastClickedLinkList = listOf(BroadcastClickedLink, 'BroadcastClickedLinkList');
