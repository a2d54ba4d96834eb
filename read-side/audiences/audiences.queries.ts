import type { Selectable } from 'kysely';
import type { Database } from '../../platform/db/database.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { iso, paginate } from '../pagination.ts';
import { readModels } from '../read-models.ts';
import type { AudiencesTable } from './audiences.schema.ts';

export const audienceJson = (r: Selectable<AudiencesTable>) => ({
  object: 'audience',
  id: r.id,
  name: r.name,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

const live = (db: Database, { orgId, mode }: Tenant) =>
  readModels(db)
    .selectFrom('audiences')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('mode', '=', mode)
    .where('deleted_at', 'is', null);

export async function findAudience(db: Database, tenant: Tenant, audienceId: string) {
  const row = await live(db, tenant).where('id', '=', audienceId).executeTakeFirst();
  return row ? audienceJson(row) : null;
}

export async function listAudiences(db: Database, tenant: Tenant, page: PageParams) {
  const result = await paginate(live(db, tenant), page);
  return { object: 'list', data: result.data.map(audienceJson), has_more: result.has_more };
}
