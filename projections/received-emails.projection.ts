import type { ReceivedEmailEvent } from '../domain/received-emails/received-email.events.ts';
import type { Projection } from './projection.ts';
import { insertRow, updateRow } from './rows.ts';

/** Received emails as `GET /v1/emails/received` lists them; their content stays in the blob store. */
export const receivedEmailsProjection: Projection<ReceivedEmailEvent> = {
  name: 'received_emails',
  tables: ['received_emails'],
  types: ['InboundEmailReceived', 'ReceivedEmailHeadersKept', 'ReceivedEmailPurged'],
  async apply(tx, e) {
    switch (e.type) {
      case 'InboundEmailReceived': {
        const d = e.data;
        return insertRow(tx, 'received_emails', {
          id: d.receivedEmailId,
          org_id: d.orgId,
          mode: d.mode,
          domain_id: d.domainId,
          domain: d.domain,
          envelope_from: d.envelope.mailFrom,
          envelope_to: JSON.stringify(d.envelope.rcptTo),
          from_email: d.from?.email ?? null,
          from_lower: d.from?.email.toLowerCase() ?? null,
          from_name: d.from?.name ?? null,
          to: JSON.stringify(d.to),
          cc: JSON.stringify(d.cc),
          reply_to: JSON.stringify(d.replyTo),
          subject: d.subject,
          message_id: d.messageId,
          in_reply_to: d.inReplyTo,
          size: d.size,
          raw_key: d.rawKey,
          content_key: d.contentKey,
          headers_key: d.headersKey ?? null,
          attachments: JSON.stringify(d.attachments),
          authentication: JSON.stringify(d.authentication),
          spam_score: d.spamScore,
          is_spam: d.isSpam,
          parse_error: d.parseError,
          created_at: d.receivedAt,
        });
      }
      case 'ReceivedEmailHeadersKept':
        return updateRow(tx, 'received_emails', e.data.receivedEmailId, { headers_key: e.data.headersKey });
      case 'ReceivedEmailPurged':
        return updateRow(tx, 'received_emails', e.data.receivedEmailId, { purged_at: e.data.purgedAt });
    }
  },
};
