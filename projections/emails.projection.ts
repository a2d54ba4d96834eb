import { EMAIL_EVENT_TYPES, type EmailEvent, recipientsOf } from '../domain/emails/email.events.ts';
import { monthOf } from '../domain/organizations/plans.ts';
import { type Queryable, type Transaction, withLiteral } from '../platform/db/database.ts';
import type { AppendedEvent } from '../platform/services.ts';
import { applyChange, applyChanges, changeOf, pendingRecipient } from './email-changes.ts';
import type { Projection } from './projection.ts';

/**
 * New emails with their recipients and attachments, and the months' usage, in one statement: this runs on the
 * path every send waits for, and a batch of the log usually holds many EmailQueued (one round trip for all).
 * Emails already there are left alone, and counted once; so only fresh emails (`n`) get attachment rows.
 * Tags come as an array literal: PostgreSQL reads a JSON array into text[] several times slower; the columns that
 * hold JSON come as JSON text, cast (docs/architecture.md, "JSON rows into PostgreSQL").
 */
const INSERT_EMAILS = `
WITH x AS (
  SELECT * FROM json_to_recordset($1::json) AS x(id text, org_id text, mode text, status text, from_address text,
    to_addresses text, cc_addresses text, bcc_addresses text, reply_to text, subject text, html text,
    text_body text, headers text, tags text, domain_id text, domain_name text, template_id text,
    template_version_id text, suppressed_recipients text, send_at timestamptz, created_at timestamptz,
    last_event text, last_event_at timestamptz, recipients text, attachments text, month text, broadcast_id text,
    topic_id text, unsubscribed_recipients text)
), e AS (
  INSERT INTO emails (id, org_id, mode, status, lifecycle, from_address, to_addresses, cc_addresses, bcc_addresses,
    reply_to, subject, html, text_body, headers, tags, domain_id, domain_name, template_id, template_version_id,
    suppressed_recipients, send_at, created_at, last_event, last_event_at, recipients, broadcast_id, topic_id,
    unsubscribed_recipients)
  SELECT id, org_id, mode, status, status, from_address, to_addresses::json, cc_addresses::json,
    bcc_addresses::json, reply_to::json, subject, html, text_body, headers::json, tags::text[], domain_id,
    domain_name, template_id, template_version_id, suppressed_recipients::json, send_at, created_at, last_event,
    last_event_at, recipients::jsonb, broadcast_id, topic_id, unsubscribed_recipients::json
  FROM x
  ON CONFLICT (id) DO NOTHING RETURNING id
), n AS (
  SELECT x.* FROM x JOIN e USING (id)
), a AS (
  INSERT INTO email_attachments (id, email_id, org_id, mode, filename, content_type, content_id, size, blob_key)
  SELECT y.id, n.id, n.org_id, n.mode, y."filename", y."contentType", y."contentId", y.size, y."blobKey"
  FROM n, json_to_recordset(n.attachments::json) AS y(id text, "filename" text, "contentType" text, "contentId" text, size integer, "blobKey" text)
)
INSERT INTO email_usage (org_id, mode, month, emails)
SELECT org_id, mode, month, count(*) FROM n GROUP BY org_id, mode, month
ON CONFLICT (org_id, mode, month) DO UPDATE SET emails = email_usage.emails + excluded.emails`;

/** A text[] literal: every element quoted, backslashes and quotes escaped. */
const textArray = (values: string[]) =>
  `{${values.map((v) => `"${v.replace(/["\\]/g, '\\$&')}"`).join(',')}}`;

type NewEmailEvent = Extract<EmailEvent, { type: 'EmailQueued' | 'EmailScheduled' }>;
/** An event that begins an email's stream, as the log has it or as its write appended it. */
const isNewEmail = <E extends { type: string }>(e: E): e is E & NewEmailEvent =>
  e.type === 'EmailQueued' || e.type === 'EmailScheduled';

/** A new email's event as its row needs it: what was appended, with its metadata. */
type RecordedEmail = NewEmailEvent & Pick<AppendedEvent, 'metadata'>;

function emailRow(e: RecordedEmail) {
  const d = e.data;
  return {
    id: d.emailId,
    org_id: e.metadata.orgId,
    mode: e.metadata.mode,
    status: e.type === 'EmailQueued' ? 'queued' : 'scheduled',
    from_address: d.from,
    to_addresses: JSON.stringify(d.to),
    cc_addresses: JSON.stringify(d.cc),
    bcc_addresses: JSON.stringify(d.bcc),
    reply_to: JSON.stringify(d.replyTo),
    subject: d.subject,
    html: d.html,
    text_body: d.text,
    headers: JSON.stringify(d.headers),
    tags: textArray(d.tags),
    domain_id: d.domainId,
    domain_name: d.domainName,
    template_id: d.templateId ?? null,
    template_version_id: d.templateVersionId ?? null,
    suppressed_recipients: JSON.stringify(d.suppressedRecipients),
    send_at: e.type === 'EmailScheduled' ? e.data.sendAt : null,
    created_at: d.createdAt,
    last_event: e.type,
    // The email's own time, not its event's: the row a send writes ahead of the projection is the one it writes.
    last_event_at: d.createdAt,
    recipients: JSON.stringify(recipientsOf(d).map((address) => pendingRecipient(address, d.createdAt))),
    attachments: JSON.stringify(d.attachments ?? []),
    // Usage per calendar month (UTC) of acceptance: what GET /v1/usage reports, overage included.
    month: monthOf(d.createdAt),
    broadcast_id: d.broadcast?.broadcastId ?? null,
    // A send's topic, or its broadcast's.
    topic_id: d.topicId ?? d.broadcast?.topicId ?? null,
    unsubscribed_recipients: d.unsubscribedRecipients ? JSON.stringify(d.unsubscribedRecipients) : null,
  };
}

/** An email queued twice (a replay) counts once: its first row goes in, as event by event (ON CONFLICT DO NOTHING). */
const rowsOf = (events: RecordedEmail[]) => {
  const first = new Map<string, RecordedEmail>();
  for (const e of events) if (!first.has(e.data.emailId)) first.set(e.data.emailId, e);
  return JSON.stringify([...first.values()].map(emailRow));
};

const insertEmails = (db: Queryable, events: RecordedEmail[]) => db.query(INSERT_EMAILS, [rowsOf(events)]);

/** The same, as a statement without parameters, for the batch's COMMIT to carry (one round trip fewer). */
const insertEmailsAtCommit = (tx: Transaction, events: RecordedEmail[]) =>
  tx.atCommit(withLiteral(INSERT_EMAILS, rowsOf(events)));

/** Emails with their recipients' outcomes, their attachments and monthly usage: what GET /v1/emails… and /v1/usage read. */
export const emailsProjection: Projection<EmailEvent> = {
  name: 'emails',
  tables: ['emails', 'email_attachments', 'email_usage'],
  types: EMAIL_EVENT_TYPES,
  async apply(tx, e) {
    if (isNewEmail(e)) return void (await insertEmails(tx, [e]));
    const change = changeOf(e);
    if (change) await applyChange(tx, e, change);
  },
  /**
   * The batch's new emails in one statement, then its other events in two (`applyChanges`, in log order): an
   * email's changes follow its own first event in the log, so its row is in before them. A batch of new emails
   * only (every batch of the send path) needs no answer: it goes with the COMMIT.
   */
  async applyBatch(tx, events) {
    const fresh = events.filter(isNewEmail);
    const changes = events.filter((e) => !isNewEmail(e));
    if (changes.length === 0) return insertEmailsAtCommit(tx, fresh);
    if (fresh.length > 0) await insertEmails(tx, fresh);
    await applyChanges(tx, changes);
  },
  /** New emails' rows, which their send writes when this projection is behind (write-side/emails/readable-email.ts). */
  async writeAhead(db, events) {
    await insertEmails(db, events.filter(isNewEmail));
  },
};
