import type { ContactEvent } from '../domain/contacts/contact.events.ts';
import type { Projection } from './projection.ts';

type ContactUnsubscribed = Extract<ContactEvent, { type: 'ContactUnsubscribed' }>;

/**
 * The emails whose unsubscribe link (its page, or its mailto) took their recipient out of a topic or of
 * everything, each once, at the first such time: what the metrics' `unsubscribed` counts (read-side/emails). A
 * projection of its own, so that it reads the whole log once when it first runs (unsubscribes recorded before
 * their events named the email count for no email).
 */
export const emailUnsubscribesProjection: Projection<ContactUnsubscribed> = {
  name: 'email-unsubscribes',
  tables: ['email_unsubscribes'],
  types: ['ContactUnsubscribed'],
  async apply(tx, e) {
    if (e.type !== 'ContactUnsubscribed' || !e.data.emailId) return;
    await tx.query(
      `INSERT INTO email_unsubscribes (email_id, unsubscribed_at) VALUES ($1, $2) ON CONFLICT (email_id) DO NOTHING`,
      [e.data.emailId, e.data.unsubscribedAt],
    );
  },
};
