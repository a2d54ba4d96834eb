import type { Selectable } from 'kysely';
import type { Database, Queryable } from '../../platform/db/database.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { iso, listPage } from '../pagination.ts';
import { readModels, tenantRows } from '../read-models.ts';
import type { ContactsTable } from './contacts.schema.ts';

export interface ContactFilters {
  audience_id?: string;
  unsubscribed?: boolean;
  email?: string;
}

const contactJson = (r: Selectable<ContactsTable>, audienceIds: string[]) => ({
  object: 'contact',
  id: r.id,
  email: r.email,
  first_name: r.first_name,
  last_name: r.last_name,
  unsubscribed: r.unsubscribed,
  properties: r.properties,
  consent_given_at: iso(r.consent_given_at),
  audience_ids: audienceIds,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

const ofTenant = (db: Database, tenant: Tenant) => tenantRows(db, 'contacts', tenant).selectAll();

/** The audiences of each contact, in one query. */
async function audiencesOf(db: Database, contactIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(contactIds.map((id) => [id, []]));
  if (contactIds.length === 0) return out;
  const rows = await readModels(db)
    .selectFrom('contact_audiences')
    .select(['contact_id', 'audience_id'])
    .where('contact_id', 'in', contactIds)
    .orderBy('audience_id')
    .execute();
  for (const r of rows) out.get(r.contact_id)?.push(r.audience_id);
  return out;
}

/**
 * The id of the contact a path names: its id as it is, or (as Resend's SDK names one) its address, in any letter
 * case, looked up: null when no contact has it.
 */
export async function contactIdOf(db: Database, tenant: Tenant, named: string): Promise<string | null> {
  if (!named.includes('@')) return named;
  const row = await tenantRows(db, 'contacts', tenant)
    .select('id')
    .where('email_lower', '=', named.trim().toLowerCase())
    .executeTakeFirst();
  return row?.id ?? null;
}

export async function findContact(db: Database, tenant: Tenant, contactId: string) {
  const row = await ofTenant(db, tenant).where('id', '=', contactId).executeTakeFirst();
  return row ? contactJson(row, (await audiencesOf(db, [row.id])).get(row.id)!) : null;
}

/** Newest first; `email` matches the whole address in any letter case. */
export async function listContacts(db: Database, tenant: Tenant, page: PageParams & ContactFilters) {
  let q = ofTenant(db, tenant);
  if (page.email) q = q.where('email_lower', '=', page.email.trim().toLowerCase());
  if (page.unsubscribed !== undefined) q = q.where('unsubscribed', '=', page.unsubscribed);
  if (page.audience_id) {
    const audienceId = page.audience_id;
    q = q.where('id', 'in', (eb) =>
      eb.selectFrom('contact_audiences').select('contact_id').where('audience_id', '=', audienceId),
    );
  }
  return listPage(q, page, async (rows) => {
    const audiences = await audiencesOf(
      db,
      rows.map((r) => r.id),
    );
    return rows.map((r) => contactJson(r, audiences.get(r.id)!));
  });
}

/** Every topic of the organization and mode with the contact's subscription: its own choice, or the default. */
export async function contactTopics(db: Database, { orgId, mode }: Tenant, contactId: string) {
  const rows = await readModels(db)
    .selectFrom('topics as t')
    .leftJoin('contact_topics as c', (join) =>
      join.onRef('c.topic_id', '=', 't.id').on('c.contact_id', '=', contactId),
    )
    .select(['t.id', 't.name', 't.description', 't.default_subscription', 'c.subscription'])
    .where('t.org_id', '=', orgId)
    .where('t.mode', '=', mode)
    .where('t.deleted_at', 'is', null)
    .orderBy('t.id', 'desc')
    .execute();
  return {
    object: 'list',
    data: rows.map((r) => ({
      object: 'contact_topic',
      id: r.id,
      name: r.name,
      description: r.description,
      subscription: r.subscription ?? r.default_subscription,
    })),
    has_more: false,
  };
}

/**
 * The contacts among `addresses` (in lower case), each with what decides whether an email about the topic
 * `topicId` reaches it (domain/topics/topic-reach.ts): its unsubscribed flag and its own choice for the topic.
 */
export async function topicReaders(
  db: Database,
  { orgId, mode }: Tenant,
  topicId: string,
  addresses: string[],
) {
  const { rows } = await db.query<{
    email_lower: string;
    unsubscribed: boolean;
    subscription: 'opt_in' | 'opt_out' | null;
  }>(
    `SELECT c.email_lower, c.unsubscribed, t.subscription
     FROM contacts c
     LEFT JOIN contact_topics t ON t.contact_id = c.id AND t.topic_id = $3
     WHERE c.org_id = $1 AND c.mode = $2 AND c.email_lower = ANY($4::text[])`,
    [orgId, mode, topicId, addresses],
  );
  return rows;
}

/** A member of an audience as a broadcast sees it: the contact, and whether it may be sent to and why not. */
export interface AudienceRecipient {
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  properties: Record<string, string | number | boolean>;
  unsubscribed: boolean;
  suppressed: boolean;
  /** The contact's own choice for the topic asked about; null when it has none (the topic's default holds). */
  subscription: 'opt_in' | 'opt_out' | null;
}

/**
 * The audience's members after `after` (contact ids, in order), at most `limit`, each with what decides whether a
 * broadcast reaches it: its unsubscribed flag, the suppression list, and its choice for `topicId`. A deleted audience
 * has none, so that its broadcast (the deletion past the delete's check) reaches no one. The cursor bounds the
 * contacts too (`c.id > $2`, which the join implies): without it PostgreSQL read the contacts from the first one
 * to the page on every page (a merge join, or a scan of the organization's contacts while the statistics were
 * those of before an import), so a page cost more the further into the audience it was.
 */
export async function audienceRecipients(
  db: Database,
  { orgId, mode }: Tenant,
  audienceId: string,
  o: { topicId: string | null; after: string; limit: number },
): Promise<AudienceRecipient[]> {
  const { rows } = await db.query<AudienceRecipient>(
    `SELECT c.id, c.email, c.first_name, c.last_name, c.properties, c.unsubscribed,
       EXISTS (SELECT 1 FROM suppressions s WHERE s.org_id = c.org_id AND s.mode = c.mode
               AND s.email_lower = c.email_lower AND s.deleted_at IS NULL) AS suppressed,
       t.subscription
     FROM contact_audiences a
     JOIN audiences au ON au.id = a.audience_id AND au.deleted_at IS NULL
     JOIN contacts c ON c.id = a.contact_id
     LEFT JOIN contact_topics t ON t.contact_id = c.id AND t.topic_id = $4
     WHERE a.audience_id = $1 AND a.contact_id > $2 AND c.id > $2 AND c.org_id = $5 AND c.mode = $6
     ORDER BY a.contact_id LIMIT $3`,
    [audienceId, o.after, o.limit, o.topicId, orgId, mode],
  );
  return rows;
}

/**
 * Has PostgreSQL measure the contacts' tables anew (ANALYZE samples at most 30,000 rows, whatever their number).
 * After a large import: autovacuum analyzes a table a minute or more after it grew, and a broadcast to the new
 * contacts meanwhile had its pages planned for the table as it was before (its first expansion cost 10–19 %
 * more an email, bench/README.md).
 */
export async function analyzeContacts(db: Queryable): Promise<void> {
  await db.query('ANALYZE contacts, contact_audiences');
}
