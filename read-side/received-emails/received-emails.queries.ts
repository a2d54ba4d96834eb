import { domainToUnicode } from 'node:url';
import { type Selectable, sql } from 'kysely';
import { asciiDomain } from '../../domain/emails/addresses.ts';
import type {
  MailAddress,
  ReceivedAttachment,
  ReceivedContent,
  ReceivedHeader,
  ReceivedHeaders,
} from '../../domain/received-emails/received-email.events.ts';
import { headerListOfMap } from '../../domain/received-emails/received-email.events.ts';
import type { Database } from '../../platform/db/database.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import type { Services } from '../../platform/services.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { iso, paginate } from '../pagination.ts';
import { readModels, tenantRows } from '../read-models.ts';
import type { ReceivedEmailsTable } from './received-emails.schema.ts';

export type ReceivedEmailRow = Selectable<ReceivedEmailsTable>;

export interface ReceivedEmailFilters {
  domain?: string;
  from?: string;
  from_date?: string;
  to_date?: string;
}

const ofTenant = (db: Database, tenant: Tenant) => tenantRows(db, 'received_emails', tenant).selectAll();

export function findReceivedEmail(db: Database, tenant: Tenant, id: string) {
  return ofTenant(db, tenant).where('id', '=', id).executeTakeFirst();
}

/**
 * A message received at `domain` (any case, Unicode or punycode): recorded for it, or sent to one of its addresses
 * as well (a message to two of an organization's domains is recorded once, for the first).
 */
function receivedAt(domain: string) {
  const ascii = asciiDomain(domain) ?? domain.toLowerCase();
  // The envelope keeps recipients as the sender named them: an internationalized domain in either form.
  const names = [...new Set([ascii, domainToUnicode(ascii) || ascii])];
  return sql<boolean>`(domain = ${ascii} OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(envelope_to) AS r(address)
    WHERE lower(substring(r.address from '@([^@]*)$')) IN (${sql.join(names)})))`;
}

/** Newest first; `domain` and `from` match whole names and addresses, in any letter case. */
export function listReceivedEmails(db: Database, tenant: Tenant, page: PageParams & ReceivedEmailFilters) {
  let q = ofTenant(db, tenant);
  if (page.domain) q = q.where(receivedAt(page.domain));
  if (page.from) q = q.where('from_lower', '=', page.from.toLowerCase());
  if (page.from_date) q = q.where('created_at', '>=', new Date(page.from_date));
  if (page.to_date) q = q.where('created_at', '<=', new Date(page.to_date));
  return paginate(q, page);
}

/** Received emails (any organization) that arrived by `before` and still hold their content, oldest first. */
export function receivedEmailsDueForPurge(db: Database, before: Date, limit: number) {
  return readModels(db)
    .selectFrom('received_emails')
    .select(['id', 'org_id', 'mode'])
    .where('purged_at', 'is', null)
    .where('created_at', '<=', before)
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

/**
 * The other records of a message that arrived for several organizations (they share its blobs), still holding
 * their content: recorded one after the other as it arrived, so looked for within a minute of `createdAt`.
 */
export function receivedEmailsSharingRaw(db: Database, rawKey: string, createdAt: Date) {
  const MINUTE = 60_000;
  return readModels(db)
    .selectFrom('received_emails')
    .select(['id', 'org_id', 'mode'])
    .where('purged_at', 'is', null)
    .where('created_at', '>=', new Date(createdAt.getTime() - MINUTE))
    .where('created_at', '<=', new Date(createdAt.getTime() + MINUTE))
    .where('raw_key', '=', rawKey)
    .execute();
}

export const receivedAttachmentJson = (row: ReceivedEmailRow, a: ReceivedAttachment) => ({
  object: 'received_attachment',
  id: a.attachmentId,
  received_email_id: row.id,
  filename: a.filename,
  content_type: a.contentType,
  content_id: a.contentId,
  size: a.size,
});

/** A signed link to one of its blobs (platform/blob-store.ts). */
export const downloadLink = (
  services: Pick<Services, 'config' | 'clock' | 'blobs'>,
  key: string,
  filename: string,
  contentType: string,
) =>
  services.blobs.downloadLink(services.config.PUBLIC_URL, key, {
    filename,
    contentType,
    now: services.clock.now(),
  });

/** A JSON blob read back, or null when it is gone (the retention ran between the read of the row and now). */
const readJson = <T>(services: Pick<Services, 'blobs'>, key: string | null): Promise<T | null> =>
  key
    ? services.blobs.get(key).then(
        (bytes) => JSON.parse(bytes.toString('utf8')) as T,
        () => null,
      )
    : Promise.resolve(null);

/**
 * The spec's `headers`: each name once, with one string; a repeated header's values joined in order with "\n".
 * Gathered in a Map: a header may be named `constructor` or `__proto__`.
 */
function headerMap(list: ReceivedHeader[]): Record<string, string> {
  const map = new Map<string, string>();
  for (const { name, value } of list) {
    const seen = map.get(name);
    map.set(name, seen === undefined ? value : `${seen}\n${value}`);
  }
  return Object.fromEntries(map);
}

/**
 * The ReceivedEmail of the API. Its bodies are read from the content blob until the retention ends; its headers
 * from their own blob, which the retention keeps (a message recorded before they had one: from the content blob).
 */
export async function receivedEmailJson(services: Pick<Services, 'config' | 'blobs'>, row: ReceivedEmailRow) {
  const [content, kept] = await Promise.all([
    readJson<ReceivedContent>(services, row.purged_at ? null : row.content_key),
    readJson<ReceivedHeaders>(services, row.headers_key),
  ]);
  const headerList = kept?.headers ?? headerListOfMap(content?.headers ?? {});
  const mailboxes = (list: MailAddress[]) => list.map(({ email, name }) => ({ email, name }));
  return {
    object: 'received_email',
    id: row.id,
    from: row.from_email ? { email: row.from_email, name: row.from_name } : null,
    to: mailboxes(row.to),
    cc: mailboxes(row.cc),
    reply_to: mailboxes(row.reply_to),
    subject: row.subject,
    text_body: content?.text ?? null,
    html_body: content?.html ?? null,
    headers: headerMap(headerList),
    header_list: headerList,
    message_id: row.message_id,
    in_reply_to: row.in_reply_to,
    spam_score: row.spam_score,
    is_spam: row.is_spam,
    authentication: row.authentication,
    attachment_count: row.attachments.length,
    attachments: row.attachments.map((a) => receivedAttachmentJson(row, a)),
    domain: row.domain,
    envelope: { from: row.envelope_from, to: row.envelope_to },
    size: row.size,
    parse_error: row.parse_error,
    created_at: iso(row.created_at),
    purged_at: iso(row.purged_at),
  };
}
