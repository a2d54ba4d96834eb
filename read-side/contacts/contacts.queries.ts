import type { Selectable } from 'kysely';
import type { Database } from '../../platform/db/database.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { iso, paginate } from '../pagination.ts';
import { readModels } from '../read-models.ts';
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

const ofTenant = (db: Database, { orgId, mode }: Tenant) =>
  readModels(db).selectFrom('contacts').selectAll().where('org_id', '=', orgId).where('mode', '=', mode);

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
  const result = await paginate(q, page);
  const audiences = await audiencesOf(
    db,
    result.data.map((r) => r.id),
  );
  return {
    object: 'list',
    data: result.data.map((r) => contactJson(r, audiences.get(r.id)!)),
    has_more: result.has_more,
  };
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
