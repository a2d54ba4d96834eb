import type { Selectable } from 'kysely';
import type { Database } from '../../platform/db/database.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { iso, listPage } from '../pagination.ts';
import { liveRows } from '../read-models.ts';
import type { TopicsTable } from './topics.schema.ts';

export const topicJson = (r: Selectable<TopicsTable>) => ({
  object: 'topic',
  id: r.id,
  name: r.name,
  description: r.description,
  default_subscription: r.default_subscription,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

const live = (db: Database, tenant: Tenant) => liveRows(db, 'topics', tenant).selectAll();

export async function findTopic(db: Database, tenant: Tenant, topicId: string) {
  const row = await live(db, tenant).where('id', '=', topicId).executeTakeFirst();
  return row ? topicJson(row) : null;
}

export async function listTopics(db: Database, tenant: Tenant, page: PageParams) {
  return listPage(live(db, tenant), page, (rows) => rows.map(topicJson));
}
