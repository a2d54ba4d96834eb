import type { Database } from '../../platform/db/database.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { iso } from '../pagination.ts';
import { readModels, tenantRows } from '../read-models.ts';

/** An import job of the tenant's, with its listed invalid rows in line order; null when it is not theirs. */
export async function findContactImport(db: Database, tenant: Tenant, importId: string) {
  const r = await tenantRows(db, 'contact_imports', tenant)
    .selectAll()
    .where('id', '=', importId)
    .executeTakeFirst();
  if (!r) return null;
  const invalid = await readModels(db)
    .selectFrom('contact_import_invalid_rows')
    .select(['line', 'reason'])
    .where('import_id', '=', importId)
    .orderBy('line')
    .execute();
  return {
    object: 'contact_import',
    id: r.id,
    audience_id: r.audience_id,
    status: r.status,
    rows_total: r.rows_total,
    rows_processed: r.rows_processed,
    rows_created: r.rows_created,
    rows_updated: r.rows_updated,
    rows_skipped: r.rows_skipped,
    invalid_rows: invalid,
    /** More rows were skipped than the list holds. */
    invalid_rows_truncated: r.rows_skipped > invalid.length,
    error: r.error,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    finished_at: iso(r.finished_at),
  };
}
