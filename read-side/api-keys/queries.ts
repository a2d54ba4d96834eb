import { sha256Hex } from '../../platform/crypto.ts';
import type { Database } from '../../platform/db/database.ts';
import type { AuthContext } from '../../platform/http/auth-context.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import { iso, paginate } from '../pagination.ts';

/**
 * Resolves a presented API key by its SHA-256 hash; a deleted key resolves to nothing. The HTTP layer keeps the
 * answers in `services.caches.apiKeys`, which empties when the `api_keys` projection changes.
 */
export async function authenticateKey(db: Database, key: string): Promise<AuthContext | null> {
  if (!/^pk_(live|test)_[A-Za-z0-9]{1,100}$/.test(key)) return null;
  const row = await db.kysely
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

export async function listApiKeys(db: Database, auth: AuthContext, page: PageParams) {
  const result = await paginate(
    db.kysely
      .selectFrom('api_keys')
      .select(['id', 'name', 'key_prefix', 'permission', 'domain_id', 'mode', 'created_at'])
      .where('org_id', '=', auth.orgId)
      .where('mode', '=', auth.mode)
      .where('deleted_at', 'is', null),
    page,
  );
  return { ...result, data: result.data.map((k: any) => ({ ...k, created_at: iso(k.created_at) })) };
}
