import type { AuthContext } from '../../platform/auth/auth-context.ts';
import { sha256Hex } from '../../platform/crypto.ts';
import type { Database } from '../../platform/db/database.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import type { Plan, Tenant } from '../../platform/tenancy.ts';
import { iso, listPage } from '../pagination.ts';
import { liveRows, readModels } from '../read-models.ts';

/**
 * Resolves a presented API key by its SHA-256 hash; a deleted key resolves to nothing. The HTTP layer keeps the
 * answers in `services.caches.apiKeys`, which empties when the `api_keys` projection changes.
 */
export async function authenticateKey(db: Database, key: string): Promise<AuthContext | null> {
  if (!/^pk_(live|test)_[A-Za-z0-9]{1,100}$/.test(key)) return null;
  const row = await readModels(db)
    .selectFrom('api_keys as k')
    .innerJoin('organizations as o', 'o.id', 'k.org_id')
    .select(['k.id', 'k.org_id', 'k.mode', 'k.permission', 'k.domain_id', 'o.plan'])
    .where('k.key_hash', '=', sha256Hex(key))
    .where('k.deleted_at', 'is', null)
    .executeTakeFirst();
  if (!row) return null;
  return {
    orgId: row.org_id,
    plan: row.plan,
    mode: row.mode,
    keyId: row.id,
    permission: row.permission,
    domainId: row.domain_id,
  };
}

export async function listApiKeys(db: Database, tenant: Tenant, page: PageParams) {
  const keys = liveRows(db, 'api_keys', tenant).select([
    'id',
    'name',
    'key_prefix',
    'permission',
    'domain_id',
    'mode',
    'created_at',
  ]);
  return listPage(keys, page, (rows) =>
    rows.map((k) => ({ object: 'api_key', ...k, created_at: iso(k.created_at) })),
  );
}

/** Every organization, oldest first, with its count of keys in use per mode: for operators (the CLI). */
export async function listOrganizations(db: Database) {
  const { rows } = await db.query<{
    id: string;
    name: string;
    plan: Plan;
    created_at: Date;
    track_client_details: boolean;
    live_keys: number;
    test_keys: number;
  }>(
    `SELECT o.id, o.name, o.plan, o.created_at, o.track_client_details,
       count(k.id) FILTER (WHERE k.mode = 'live')::int AS live_keys,
       count(k.id) FILTER (WHERE k.mode = 'test')::int AS test_keys
     FROM organizations o LEFT JOIN api_keys k ON k.org_id = o.id AND k.deleted_at IS NULL
     GROUP BY o.id ORDER BY o.created_at, o.id`,
  );
  return rows;
}

/** An organization by id, or null. */
export async function findOrganization(db: Database, orgId: string) {
  const row = await readModels(db)
    .selectFrom('organizations')
    .selectAll()
    .where('id', '=', orgId)
    .executeTakeFirst();
  return row ?? null;
}

/** Whether the organization records its openers' and clickers' IP address and user agent (sealed). */
export async function tracksClientDetails(db: Database, orgId: string): Promise<boolean> {
  const row = await readModels(db)
    .selectFrom('organizations')
    .select('track_client_details')
    .where('id', '=', orgId)
    .executeTakeFirst();
  return row?.track_client_details ?? false;
}

/** A key in use by id, any organization (the CLI revokes by id alone), or null. */
export async function findApiKeyById(db: Database, keyId: string) {
  const row = await readModels(db)
    .selectFrom('api_keys')
    .select(['id', 'org_id', 'mode'])
    .where('id', '=', keyId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return row ?? null;
}
