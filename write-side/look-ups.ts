import type { PlanSlotResource } from '../domain/plan-slots/plan-slot.events.ts';
import type { AuthContext } from '../platform/auth/auth-context.ts';
import type { Database } from '../platform/db/database.ts';
import type { Mode } from '../platform/eventstore/types.ts';
import type { SharedLookup } from '../platform/services.ts';
import type { Tenant } from '../platform/tenancy.ts';

/**
 * What the write side asks of the read models, in its own terms. The composition root passes read-side's query
 * functions (bin/look-ups.ts); TypeScript checks there that each fits the signature declared here. A member
 * declares only what the write side reads of the answer.
 */
declare module '../platform/services.ts' {
  interface LookUps {
    /** The topic as `GET /v1/topics/{id}` answers it, or null. */
    findTopic(db: Database, tenant: Tenant, topicId: string): Promise<{ id: string } | null>;
    /** The audience as `GET /v1/audiences/{id}` answers it, or null. */
    findAudience(db: Database, tenant: Tenant, audienceId: string): Promise<{ id: string } | null>;
    /** The domain as `GET /v1/domains/{id}` answers it, or null. */
    findApiDomain(db: Database, tenant: Tenant, domainId: string): Promise<{ id: string } | null>;
    /** The ids of the organization's resources of a kind that count toward its plan (not deleted). */
    countedResourceIds(db: Database, tenant: Tenant, resource: PlanSlotResource): Promise<string[]>;
  }
}

/**
 * The shared look-ups every send makes, cached until their projection changes or batched (bin/caches.ts builds
 * them with read-side's queries). A member declares only what its callers read of the answer.
 */
declare module '../platform/services.ts' {
  interface Caches {
    /** The API key presented (kept by its SHA-256 hash), or null when it is unknown or deleted. */
    apiKeys: SharedLookup<[key: string], AuthContext | null>;
    /** The domain of the organization and mode a From address names, or null. */
    sendingDomains: SharedLookup<
      [tenant: Tenant, name: string],
      { id: string; name: string; canSendLive: boolean } | null
    >;
    /** A domain of the organization and mode by id (a key restricted to a domain), or null. */
    domainsById: SharedLookup<[tenant: Tenant, domainId: string], { name: string } | null>;
    /** The domains, of any organization and mode, that asked for inbound mail under this name. */
    inboundDomains: SharedLookup<
      [name: string],
      { id: string; orgId: string; mode: Mode; name: string; inboundVerified: boolean }[]
    >;
    /** The organization's suppressed addresses (lower case) when the list is short, else null. */
    suppressions: SharedLookup<[tenant: Tenant], ReadonlySet<string> | null>;
    /** Whether sending to the address is blocked for the organization and mode (one batched query). */
    suppressed: SharedLookup<[tenant: Tenant, address: string], boolean>;
  }
}
