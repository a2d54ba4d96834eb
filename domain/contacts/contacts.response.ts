import { z } from 'zod';
import { listOf, timestamp } from '../../platform/http/route-schema.ts';

/** What a contact's path may give for it (Resend's SDK names contacts by their address). */
export const BY_ID_OR_ADDRESS =
  'The path names the contact by its id, or by its email address (in any letter case).';

export const Contact = z
  .strictObject({
    object: z.literal('contact'),
    id: z.string(),
    email: z.string(),
    first_name: z.string().nullable(),
    last_name: z.string().nullable(),
    unsubscribed: z.boolean(),
    properties: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
    consent_given_at: timestamp.nullable(),
    audience_ids: z.array(z.string()),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Contact' });

export const ContactList = listOf(Contact, 'ContactList');

/** A topic as one contact sees it: its own choice, or the topic's default. */
const ContactTopic = z
  .strictObject({
    object: z.literal('contact_topic'),
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    subscription: z.enum(['opt_in', 'opt_out']),
  })
  .meta({ id: 'ContactTopic' });

export const ContactTopicList = listOf(ContactTopic, 'ContactTopicList');
