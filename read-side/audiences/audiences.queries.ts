import type { Selectable } from 'kysely';
import type { Database } from '../../platform/db/database.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { iso, listPage } from '../pagination.ts';
import { liveRows, readModels } from '../read-models.ts';
import type { AudiencesTable } from './audiences.schema.ts';

export const audienceJson = (r: Selectable<AudiencesTable>) => ({
  object: 'audience',
  id: r.id,
  name: r.name,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

const live = (db: Database, tenant: Tenant) => liveRows(db, 'audiences', tenant).selectAll();

export async function findAudience(db: Database, tenant: Tenant, audienceId: string) {
  const row = await live(db, tenant).where('id', '=', audienceId).executeTakeFirst();
  return row ? audienceJson(row) : null;
}

/** The audience with how many contacts it has now. */
export async function findAudienceWithCount(db: Database, tenant: Tenant, audienceId: string) {
  const audience = await findAudience(db, tenant, audienceId);
  if (!audience) return null;
  const { count } = await readModels(db)
    .selectFrom('contact_audiences')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('audience_id', '=', audienceId)
    .executeTakeFirstOrThrow();
  return { ...audience, contacts: Number(count) };
}

export async function listAudiences(db: Database, tenant: Tenant, page: PageParams) {
  return listPage(live(db, tenant), page, (rows) => rows.map(audienceJson));
}
