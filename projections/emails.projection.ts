import type { Transaction } from '../platform/db/database.ts';
import type { StoredEvent } from '../platform/eventstore/types.ts';
import { recipientsOf } from '../write-side/emails/decider.ts';
import { EMAIL_EVENT_TYPES, type EmailEvent } from '../write-side/emails/events.ts';
import { monthOf } from '../write-side/emails/quota.ts';
import { type Lifecycle, type RecipientStatus, rollUp } from '../write-side/emails/status.ts';
import type { Projection } from './projection.ts';

/** Recomputes the email's status from its lifecycle and its recipients (the same roll-up as the decider). */
async function refreshStatus(tx: Transaction, emailId: string, event: StoredEvent, lifecycle?: Lifecycle) {
  const { rows } = await tx.query<{ lifecycle: Lifecycle; statuses: RecipientStatus[] | null }>(
    `UPDATE emails SET lifecycle = coalesce($2, lifecycle), last_event = $3, last_event_at = $4 WHERE id = $1
     RETURNING lifecycle, (SELECT array_agg(r.status) FROM email_recipients r WHERE r.email_id = $1) AS statuses`,
    [emailId, lifecycle ?? null, event.type, event.createdAt],
  );
  if (!rows[0]) return;
  const status = rollUp(rows[0].lifecycle, rows[0].statuses ?? []);
  await tx.query('UPDATE emails SET status = $2 WHERE id = $1 AND status <> $2', [emailId, status]);
}

async function setRecipient(
  tx: Transaction,
  emailId: string,
  address: string,
  at: string,
  fields: Record<string, unknown>,
) {
  const names = Object.keys(fields);
  const sets = names.map((n, i) => `${n} = $${i + 4}`).join(', ');
  await tx.query(
    `UPDATE email_recipients SET ${sets}, updated_at = $3 WHERE email_id = $1 AND address = $2`,
    [emailId, address, at, ...names.map((n) => fields[n])],
  );
}

/**
 * The email, its recipients, its attachments and the month's usage in one statement (one round trip: this runs
 * once per accepted email, on the path every send waits for). Nothing happens when the email row exists.
 */
const INSERT_EMAIL = `
WITH e AS (
  INSERT INTO emails (id, org_id, mode, status, lifecycle, from_address, to_addresses, cc_addresses, bcc_addresses, reply_to,
    subject, html, text_body, headers, tags, domain_id, domain_name, template_id, template_version_id,
    suppressed_recipients, send_at, created_at, last_event, last_event_at)
  VALUES ($1, $2, $3, $4, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)
  ON CONFLICT (id) DO NOTHING RETURNING id, org_id, mode, created_at
), r AS (
  INSERT INTO email_recipients (email_id, address, org_id, mode, status, updated_at)
  SELECT e.id, x.address, e.org_id, e.mode, 'pending', e.created_at FROM e, unnest($24::text[]) AS x(address)
  ON CONFLICT DO NOTHING
), a AS (
  INSERT INTO email_attachments (id, email_id, org_id, mode, filename, content_type, content_id, size, blob_key)
  SELECT x.id, e.id, e.org_id, e.mode, x."filename", x."contentType", x."contentId", x.size, x."blobKey"
  FROM e, jsonb_to_recordset($25::jsonb) AS x(id text, "filename" text, "contentType" text, "contentId" text, size integer, "blobKey" text)
  ON CONFLICT (id) DO NOTHING
)
INSERT INTO email_usage (org_id, mode, month, emails)
SELECT e.org_id, e.mode, $26, 1 FROM e
ON CONFLICT (org_id, mode, month) DO UPDATE SET emails = email_usage.emails + 1`;

async function insertEmail(
  tx: Transaction,
  event: StoredEvent,
  e: Extract<EmailEvent, { type: 'EmailQueued' | 'EmailScheduled' }>,
) {
  const d = e.data;
  const { orgId, mode } = event.metadata;
  await tx.query(INSERT_EMAIL, [
    d.emailId,
    orgId,
    mode,
    e.type === 'EmailQueued' ? 'queued' : 'scheduled',
    d.from,
    JSON.stringify(d.to),
    JSON.stringify(d.cc),
    JSON.stringify(d.bcc),
    JSON.stringify(d.replyTo),
    d.subject,
    d.html,
    d.text,
    JSON.stringify(d.headers),
    d.tags,
    d.domainId,
    d.domainName,
    d.templateId ?? null,
    d.templateVersionId ?? null,
    JSON.stringify(d.suppressedRecipients),
    e.type === 'EmailScheduled' ? e.data.sendAt : null,
    d.createdAt,
    e.type,
    event.createdAt,
    recipientsOf(d),
    JSON.stringify(d.attachments),
    // Usage per calendar month (UTC) of acceptance: what GET /v1/usage reports, overage included.
    monthOf(d.createdAt),
  ]);
}

/** Emails, their recipients' outcomes, attachments and monthly usage: what GET /v1/emails… and /v1/usage read. */
export const emailsProjection: Projection = {
  name: 'emails',
  tables: ['emails', 'email_recipients', 'email_attachments', 'email_usage'],
  types: EMAIL_EVENT_TYPES,
  async apply(tx: Transaction, event: StoredEvent) {
    const e = event as unknown as EmailEvent;
    switch (e.type) {
      case 'EmailQueued':
      case 'EmailScheduled':
        return insertEmail(tx, event, e);
      case 'EmailRescheduled':
        await tx.query('UPDATE emails SET send_at = $2 WHERE id = $1', [e.data.emailId, e.data.sendAt]);
        return refreshStatus(tx, e.data.emailId, event);
      case 'EmailCanceled':
        return refreshStatus(tx, e.data.emailId, event, 'canceled');
      case 'EmailReleased':
        return refreshStatus(tx, e.data.emailId, event, 'queued');
      case 'EmailSendingStarted':
        return refreshStatus(tx, e.data.emailId, event, 'sending');
      case 'EmailSent':
        await tx.query('UPDATE emails SET message_id = $2 WHERE id = $1', [e.data.emailId, e.data.messageId]);
        return refreshStatus(tx, e.data.emailId, event, 'sent');
      case 'EmailDelivered':
        await setRecipient(tx, e.data.emailId, e.data.recipient, e.data.deliveredAt, {
          status: 'delivered',
          // EmailDelivered carries no code: clear the 4xx an earlier EmailDeliveryDelayed left.
          smtp_code: null,
          smtp_response: e.data.smtpResponse,
          next_attempt_at: null,
        });
        return refreshStatus(tx, e.data.emailId, event);
      case 'EmailDeliveryDelayed':
        await setRecipient(tx, e.data.emailId, e.data.recipient, e.data.delayedAt, {
          status: 'delayed',
          attempts: e.data.attempt,
          smtp_code: e.data.smtpCode ?? null,
          smtp_response: e.data.smtpResponse,
          next_attempt_at: e.data.nextAttemptAt,
        });
        return refreshStatus(tx, e.data.emailId, event);
      case 'EmailBounced':
        await setRecipient(tx, e.data.emailId, e.data.recipient, e.data.bouncedAt, {
          status: 'bounced',
          bounce_type: e.data.bounceType,
          smtp_code: e.data.smtpCode,
          smtp_response: e.data.smtpResponse,
          next_attempt_at: null,
        });
        return refreshStatus(tx, e.data.emailId, event);
      case 'EmailComplained':
        await setRecipient(tx, e.data.emailId, e.data.recipient, e.data.complainedAt, {
          status: 'complained',
        });
        return refreshStatus(tx, e.data.emailId, event);
      case 'EmailOpened':
        await tx.query('UPDATE emails SET opens = opens + 1 WHERE id = $1', [e.data.emailId]);
        return refreshStatus(tx, e.data.emailId, event);
      case 'EmailClicked':
        await tx.query('UPDATE emails SET clicks = clicks + 1 WHERE id = $1', [e.data.emailId]);
        return refreshStatus(tx, e.data.emailId, event);
    }
  },
};
