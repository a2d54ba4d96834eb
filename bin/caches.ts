import { sha256Hex } from '../platform/crypto.ts';
import type { Database } from '../platform/db/database.ts';
import type { Caches } from '../platform/services.ts';
import type { Tenant } from '../platform/tenancy.ts';
import { ReadModelCache } from '../projections/read-model-cache.ts';
import type { ProjectionWaiter } from '../projections/waiter.ts';
import { authenticateKey } from '../read-side/api-keys/api-keys.queries.ts';
import {
  findDomainById,
  findInboundDomains,
  findSendingDomain,
} from '../read-side/domains/domains.queries.ts';
import { smallSuppressionList, suppressionChecks } from '../read-side/suppressions/suppressions.queries.ts';

const scoped = (tenant: Tenant, name: string) => `${tenant.orgId} ${tenant.mode} ${name}`;

/** The shared look-ups of `Services` (write-side/look-ups.ts declares them), each with its read-side query. */
export function readModelCaches(waiter: ProjectionWaiter, db: Database): Caches {
  return {
    // An unknown key is kept 2 s at most (and dropped when api_keys changes), so a guess repeated costs no
    // look-up, yet a key created a moment ago in another process works within 2 s even if no NOTIFY came.
    apiKeys: new ReadModelCache(waiter, 'api_keys', {
      key: sha256Hex,
      load: (key: string) => authenticateKey(db, key),
      nullMaxAgeMs: 2000,
    }),
    sendingDomains: new ReadModelCache(waiter, 'domains', {
      key: scoped,
      load: (tenant: Tenant, name: string) => findSendingDomain(db, tenant, name),
    }),
    domainsById: new ReadModelCache(waiter, 'domains', {
      key: scoped,
      load: (tenant: Tenant, id: string) => findDomainById(db, tenant, id),
    }),
    inboundDomains: new ReadModelCache(waiter, 'domains', {
      key: (name: string) => name,
      load: (name: string) => findInboundDomains(db, name),
    }),
    // Whole lists of at most SMALL_SUPPRESSION_LIST addresses each: 1,000 of them stay under about 60 MB.
    suppressions: new ReadModelCache(waiter, 'suppressions', {
      key: (tenant: Tenant) => `${tenant.orgId} ${tenant.mode}`,
      load: (tenant: Tenant) => smallSuppressionList(db, tenant),
      maxEntries: 1000,
    }),
    suppressed: suppressionChecks(db),
  };
}
