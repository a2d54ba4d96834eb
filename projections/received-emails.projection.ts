import type { ReceivedEmailEvent } from '../domain/received-emails/received-email.events.ts';
import { type Transaction, withLiteral } from '../platform/db/database.ts';
import type { Stored } from '../platform/eventstore/types.ts';
import type { Projection } from './projection.ts';
import { updateRow } from './rows.ts';

type Received = Stored<Extract<ReceivedEmailEvent, { type: 'InboundEmailReceived' }>>;
const isReceived = (e: Stored<ReceivedEmailEvent>): e is Received => e.type === 'InboundEmailReceived';

/**
 * New received emails in one statement, their rows read from a JSON array by the table's own row type: the MX's
 * 250 waits for nothing here, but every message is one, and a batch of the log holds several. A row already there
 * is left alone, so an event applied again changes nothing. The array is read as jsonb: six of the columns are
 * (docs/architecture.md, "JSON rows into PostgreSQL").
 */
const INSERT_RECEIVED = `INSERT INTO received_emails
  SELECT * FROM jsonb_populate_recordset(NULL::received_emails, $1::jsonb) ON CONFLICT (id) DO NOTHING`;

function receivedRow({ data: d }: Received) {
  return {
    id: d.receivedEmailId,
    org_id: d.orgId,
    mode: d.mode,
    domain_id: d.domainId,
    domain: d.domain,
    envelope_from: d.envelope.mailFrom,
    envelope_to: d.envelope.rcptTo,
    from_email: d.from?.email ?? null,
    from_lower: d.from?.email.toLowerCase() ?? null,
    from_name: d.from?.name ?? null,
    to: d.to,
    cc: d.cc,
    reply_to: d.replyTo,
    subject: d.subject,
    message_id: d.messageId,
    in_reply_to: d.inReplyTo,
    size: d.size,
    raw_key: d.rawKey,
    content_key: d.contentKey,
    headers_key: d.headersKey ?? null,
    attachments: d.attachments,
    authentication: d.authentication,
    spam_score: d.spamScore,
    is_spam: d.isSpam,
    parse_error: d.parseError,
    created_at: d.receivedAt,
    purged_at: null,
  };
}

const rowsOf = (events: Received[]) => JSON.stringify(events.map(receivedRow));

async function applyChange(tx: Transaction, e: Stored<ReceivedEmailEvent>): Promise<void> {
  switch (e.type) {
    case 'InboundEmailReceived':
      return void (await tx.query(INSERT_RECEIVED, [rowsOf([e])]));
    case 'ReceivedEmailHeadersKept':
      return updateRow(tx, 'received_emails', e.data.receivedEmailId, { headers_key: e.data.headersKey });
    case 'ReceivedEmailPurged':
      return updateRow(tx, 'received_emails', e.data.receivedEmailId, { purged_at: e.data.purgedAt });
  }
}

/** Received emails as `GET /v1/emails/received` lists them; their content stays in the blob store. */
export const receivedEmailsProjection: Projection<ReceivedEmailEvent> = {
  name: 'received_emails',
  tables: ['received_emails'],
  types: ['InboundEmailReceived', 'ReceivedEmailHeadersKept', 'ReceivedEmailPurged'],
  apply: applyChange,
  /**
   * Runs of new received emails go in one statement, other events one by one, in log order; a run that ends the
   * batch goes with its COMMIT (one round trip fewer).
   */
  async applyBatch(tx, events) {
    for (let i = 0; i < events.length; ) {
      if (!isReceived(events[i])) {
        await applyChange(tx, events[i++]);
        continue;
      }
      let j = i + 1;
      while (j < events.length && isReceived(events[j])) j++;
      const run = events.slice(i, j).filter(isReceived);
      if (j === events.length) tx.atCommit(withLiteral(INSERT_RECEIVED, rowsOf(run)));
      else await tx.query(INSERT_RECEIVED, [rowsOf(run)]);
      i = j;
    }
  },
};
