import type { Database } from '../../platform/db/database.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import { iso, paginate } from '../pagination.ts';

const COLUMNS = ['id', 'email', 'reason', 'source_email_id', 'created_at'] as const;

export const suppressionJson = (r: {
  id: string;
  email: string;
  reason: string;
  source_email_id: string | null;
  created_at: Date | string;
}) => ({
  object: 'suppression',
  id: r.id,
  email: r.email,
  reason: r.reason,
  source_email_id: r.source_email_id,
  created_at: iso(r.created_at),
});

const active = (db: Database, orgId: string, mode: Mode) =>
  db.kysely
    .selectFrom('suppressions')
    .select([...COLUMNS])
    .where('org_id', '=', orgId)
    .where('mode', '=', mode)
    .where('deleted_at', 'is', null);

/** Whether sending to `address` is blocked for this organization and mode; addresses compare case-insensitively. */
export async function isSuppressed(
  db: Database,
  orgId: string,
  mode: Mode,
  address: string,
): Promise<boolean> {
  const row = await active(db, orgId, mode)
    .where('email_lower', '=', address.trim().toLowerCase())
    .executeTakeFirst();
  return !!row;
}

export async function findSuppression(db: Database, orgId: string, mode: Mode, suppressionId: string) {
  const row = await active(db, orgId, mode).where('id', '=', suppressionId).executeTakeFirst();
  return row ? suppressionJson(row as any) : null;
}

export async function listSuppressions(
  db: Database,
  orgId: string,
  mode: Mode,
  page: PageParams & { reason?: string },
) {
  const q = page.reason ? active(db, orgId, mode).where('reason', '=', page.reason) : active(db, orgId, mode);
  const result = await paginate(q, page);
  return { object: 'list', data: result.data.map((r: any) => suppressionJson(r)), has_more: result.has_more };
}
