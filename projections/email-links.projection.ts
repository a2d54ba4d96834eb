import type { EmailClicked } from '../domain/emails/email.events.ts';
import type { Projection } from './projection.ts';

/**
 * The clicks of each link of each email: what a broadcast's clicked links and its recipients' links are read from
 * (read-side/broadcasts). A projection of its own, so that it reads the whole log once when it first runs and
 * counts the clicks recorded before it too.
 */
export const emailLinksProjection: Projection<EmailClicked> = {
  name: 'email-links',
  tables: ['email_link_clicks'],
  types: ['EmailClicked'],
  async apply(tx, e) {
    if (e.type !== 'EmailClicked') return;
    await tx.query(
      `INSERT INTO email_link_clicks (email_id, link_id, link, clicks) VALUES ($1, 'lnk_' || md5($2), $2, 1)
       ON CONFLICT (email_id, link_id) DO UPDATE SET clicks = email_link_clicks.clicks + 1`,
      [e.data.emailId, e.data.link],
    );
  },
};
