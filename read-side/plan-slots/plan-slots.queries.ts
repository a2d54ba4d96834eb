import type { PlanSlotResource } from '../../domain/plan-slots/plan-slot.events.ts';
import type { Database } from '../../platform/db/database.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { readModels } from '../read-models.ts';

/**
 * The ids of an organization's resources of one kind in one mode that count against its plan: those the read model
 * holds and that are not deleted (the plan-slot commands seed a slot stream from them).
 */
export async function countedResourceIds(
  db: Pick<Database, 'kysely'>,
  { orgId, mode }: Tenant,
  resource: PlanSlotResource,
): Promise<string[]> {
  const rows = await readModels(db)
    .selectFrom(resource)
    .select('id')
    .where('org_id', '=', orgId)
    .where('mode', '=', mode)
    .where('deleted_at', 'is', null)
    .execute();
  return rows.map((r) => r.id);
}
