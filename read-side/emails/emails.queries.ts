import { type Selectable, sql } from 'kysely';
import { asciiDomain } from '../../domain/emails/addresses.ts';
import { publicEmailEventType } from '../../domain/emails/public-event-types.ts';
import type { EmailStatus } from '../../domain/emails/status.ts';
import { monthEnd } from '../../domain/organizations/plans.ts';
import type { Database } from '../../platform/db/database.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import type { Plan, Tenant } from '../../platform/tenancy.ts';
import { iso, listPage } from '../pagination.ts';
import { readModels, tenantRows } from '../read-models.ts';
import type { EmailAttachmentsTable, EmailsTable, RecipientEntry } from './emails.schema.ts';

export interface EmailFilters {
  status?: EmailStatus;
  domain?: string;
  tag?: string;
  from_date?: string;
  to_date?: string;
}

function toApiEmail(row: Selectable<EmailsTable>, full: boolean) {
  const summary = {
    object: 'email',
    id: row.id,
    status: row.status,
    from: row.from_address,
    to: row.to_addresses,
    cc: row.cc_addresses,
    bcc: row.bcc_addresses,
    reply_to: row.reply_to,
    subject: row.subject,
    tags: row.tags,
    domain_id: row.domain_id,
    domain: row.domain_name,
    template_id: row.template_id,
    send_at: iso(row.send_at),
    created_at: iso(row.created_at),
    // The read model keeps the internal type; the API shows its public name.
    last_event: publicEmailEventType(row.last_event),
    last_event_at: iso(row.last_event_at),
  };
  if (!full) return summary;
  return {
    ...summary,
    html: row.html,
    text: row.text_body,
    headers: row.headers,
    template_version_id: row.template_version_id,
    message_id: row.message_id,
    suppressed_recipients: row.suppressed_recipients,
    topic_id: row.topic_id,
    unsubscribed_recipients: row.unsubscribed_recipients ?? [],
    opens: row.opens,
    clicks: row.clicks,
  };
}

/**
 * An entry of `emails.recipients`, in the API's field order. A canceled email has no next attempt: a stopped
 * broadcast's deferred email keeps its recipient's last outcome (`delayed`), not the retry it will never make.
 */
const toApiRecipient = (r: RecipientEntry, canceled: boolean) => ({
  email: r.email,
  status: r.status,
  attempts: r.attempts,
  smtp_code: r.smtp_code,
  smtp_response: r.smtp_response,
  bounce_type: r.bounce_type,
  classification: r.classification ?? null,
  next_attempt_at: canceled ? null : r.next_attempt_at,
  updated_at: r.updated_at,
});

const byEmail = (a: { email: string }, b: { email: string }) =>
  a.email < b.email ? -1 : a.email > b.email ? 1 : 0;

/** The full Email: addresses, bodies, tags, status, send_at, last_event and each recipient's outcome. */
export async function getEmail(db: Database, t: Tenant, emailId: string) {
  const row = await tenantRows(db, 'emails', t).selectAll().where('id', '=', emailId).executeTakeFirst();
  if (!row) return null;
  const canceled = row.status === 'canceled';
  return {
    ...toApiEmail(row, true),
    recipients: row.recipients.map((r) => toApiRecipient(r, canceled)).sort(byEmail),
  };
}

export async function listEmails(db: Database, t: Tenant, page: PageParams & EmailFilters) {
  let q = tenantRows(db, 'emails', t).selectAll();
  if (page.status) q = q.where('status', '=', page.status);
  if (page.domain) {
    // Domain names are kept in punycode: a Unicode name (bücher.example) finds them too.
    const name = asciiDomain(page.domain) ?? page.domain.toLowerCase();
    q = q.where((eb) => eb.or([eb('domain_name', '=', name), eb('domain_id', '=', page.domain!)]));
  }
  if (page.tag) q = q.where(sql<boolean>`tags @> ARRAY[${page.tag}]::text[]`);
  if (page.from_date) q = q.where('created_at', '>=', new Date(page.from_date));
  if (page.to_date) q = q.where('created_at', '<=', new Date(page.to_date));
  return listPage(q, page, (rows) => rows.map((r) => toApiEmail(r, false)));
}

/** Tenancy of an email, for routes that read its stream: null when it is not the caller's. */
export async function emailExists(db: Database, t: Tenant, emailId: string): Promise<boolean> {
  const row = await tenantRows(db, 'emails', t).select('id').where('id', '=', emailId).executeTakeFirst();
  return !!row;
}

export type AttachmentRow = Omit<Selectable<EmailAttachmentsTable>, 'org_id' | 'mode'>;

export async function listAttachments(db: Database, t: Tenant, emailId: string): Promise<AttachmentRow[]> {
  return tenantRows(db, 'email_attachments', t)
    .select(['id', 'email_id', 'filename', 'content_type', 'content_id', 'size', 'blob_key'])
    .where('email_id', '=', emailId)
    .orderBy('id')
    .execute();
}

/**
 * The plan the organization was on at the end of `month` (YYYY-MM, UTC), or is on now in the month under way:
 * the one its overage is figured with. Null before the organization existed.
 */
export async function planOfMonth(db: Database, orgId: string, month: string): Promise<Plan | null> {
  const row = await readModels(db)
    .selectFrom('organization_plans')
    .select('plan')
    .where('org_id', '=', orgId)
    .where('since', '<', monthEnd(month))
    .orderBy('revision', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.plan ?? null;
}

/** Emails accepted this month (UTC) per mode, for the plan quota and overage. */
export async function monthlyUsage(db: Database, t: Tenant, month: string): Promise<number> {
  const row = await tenantRows(db, 'email_usage', t)
    .select('emails')
    .where('month', '=', month)
    .executeTakeFirst();
  return row ? Number(row.emails) : 0;
}
