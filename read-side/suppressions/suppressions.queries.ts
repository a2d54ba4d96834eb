import type { SuppressionReason } from '../../domain/suppressions/suppression.events.ts';
import { suppressionJson } from '../../domain/suppressions/suppressions.response.ts';
import { Batcher } from '../../platform/batcher.ts';
import type { Database } from '../../platform/db/database.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { listPage } from '../pagination.ts';
import { liveRows } from '../read-models.ts';

const COLUMNS = ['id', 'email', 'reason', 'source_email_id', 'created_at'] as const;

const active = (db: Database, tenant: Tenant) => liveRows(db, 'suppressions', tenant).select([...COLUMNS]);

type Recipient = { orgId: string; mode: Mode; address: string };
const recipientKey = (r: Recipient) => `${r.orgId} ${r.mode} ${r.address}`;

/** One query for many recipients (of any organizations): which of them are suppressed. */
async function suppressedAmong(db: Database, recipients: Recipient[]): Promise<boolean[]> {
  const { rows } = await db.query<{ org_id: string; mode: Mode; email_lower: string }>(
    `SELECT org_id, mode, email_lower FROM suppressions
     WHERE deleted_at IS NULL
       AND (org_id, mode, email_lower) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))`,
    [recipients.map((r) => r.orgId), recipients.map((r) => r.mode), recipients.map((r) => r.address)],
  );
  const found = new Set(
    rows.map((r) => recipientKey({ orgId: r.org_id, mode: r.mode, address: r.email_lower })),
  );
  return recipients.map((r) => found.has(recipientKey(r)));
}

/**
 * Whether sending to an address is blocked for an organization and mode; addresses compare case-insensitively.
 * Every send checks its recipients: the checks of requests in flight together share one query. Built once per
 * service, in the composition root (`services.caches.suppressed`).
 */
export function suppressionChecks(db: Database) {
  const batcher = new Batcher<Recipient, boolean>({
    run: (recipients: Recipient[]) => suppressedAmong(db, recipients),
    maxWeight: 1000,
  });
  return {
    get: ({ orgId, mode }: Tenant, address: string): Promise<boolean> =>
      batcher.add({ orgId, mode, address: address.trim().toLowerCase() }),
  };
}

/** Lists up to this long are read whole and kept in memory by the send path; longer ones are asked per address. */
export const SMALL_SUPPRESSION_LIST = 1000;

/** The organization's suppressed addresses (lower case) when there are at most SMALL_SUPPRESSION_LIST; else null. */
export async function smallSuppressionList(
  db: Database,
  { orgId, mode }: Tenant,
): Promise<Set<string> | null> {
  const { rows } = await db.query<{ email_lower: string }>(
    `SELECT email_lower FROM suppressions WHERE org_id = $1 AND mode = $2 AND deleted_at IS NULL LIMIT $3`,
    [orgId, mode, SMALL_SUPPRESSION_LIST + 1],
  );
  return rows.length > SMALL_SUPPRESSION_LIST ? null : new Set(rows.map((r) => r.email_lower));
}

export async function findSuppression(db: Database, tenant: Tenant, suppressionId: string) {
  const row = await active(db, tenant).where('id', '=', suppressionId).executeTakeFirst();
  return row ? suppressionJson(row) : null;
}

export async function listSuppressions(
  db: Database,
  tenant: Tenant,
  page: PageParams & { reason?: SuppressionReason },
) {
  const q = page.reason ? active(db, tenant).where('reason', '=', page.reason) : active(db, tenant);
  return listPage(q, page, (rows) => rows.map(suppressionJson));
}
