import type { ReceivedEmailEvent } from '../write-side/inbound/received-email.events.ts';
import type { Projection } from './projection.ts';

/** Received emails as `GET /v1/emails/received` lists them; their content stays in the blob store. */
export const receivedEmailsProjection: Projection<ReceivedEmailEvent> = {
  name: 'received_emails',
  tables: ['received_emails'],
  types: ['InboundEmailReceived', 'ReceivedEmailPurged'],
  async apply(tx, e) {
    switch (e.type) {
      case 'InboundEmailReceived': {
        const d = e.data;
        await tx.query(
          `INSERT INTO received_emails (id, org_id, mode, domain_id, domain, envelope_from, envelope_to, from_email,
             from_lower, from_name, "to", cc, reply_to, subject, message_id, in_reply_to, size, raw_key, content_key,
             attachments, authentication, spam_score, is_spam, parse_error, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21,
             $22, $23, $24, $25)
           ON CONFLICT (id) DO NOTHING`,
          [
            d.receivedEmailId,
            d.orgId,
            d.mode,
            d.domainId,
            d.domain,
            d.envelope.mailFrom,
            JSON.stringify(d.envelope.rcptTo),
            d.from?.email ?? null,
            d.from?.email.toLowerCase() ?? null,
            d.from?.name ?? null,
            JSON.stringify(d.to),
            JSON.stringify(d.cc),
            JSON.stringify(d.replyTo),
            d.subject,
            d.messageId,
            d.inReplyTo,
            d.size,
            d.rawKey,
            d.contentKey,
            JSON.stringify(d.attachments),
            JSON.stringify(d.authentication),
            d.spamScore,
            d.isSpam,
            d.parseError,
            d.receivedAt,
          ],
        );
        return;
      }
      case 'ReceivedEmailPurged':
        await tx.query('UPDATE received_emails SET purged_at = $2 WHERE id = $1', [
          e.data.receivedEmailId,
          e.data.purgedAt,
        ]);
        return;
    }
  },
};
