import type { Selectable } from 'kysely';
import type { Database } from '../../platform/db/database.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { iso, paginate } from '../pagination.ts';
import { readModels } from '../read-models.ts';
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

const live = (db: Database, { orgId, mode }: Tenant) =>
  readModels(db)
    .selectFrom('topics')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('mode', '=', mode)
    .where('deleted_at', 'is', null);

export async function findTopic(db: Database, tenant: Tenant, topicId: string) {
  const row = await live(db, tenant).where('id', '=', topicId).executeTakeFirst();
  return row ? topicJson(row) : null;
}

export async function listTopics(db: Database, tenant: Tenant, page: PageParams) {
  const result = await paginate(live(db, tenant), page);
  return { object: 'list', data: result.data.map(topicJson), has_more: result.has_more };
}
