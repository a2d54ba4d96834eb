import type { Impressum } from '../domain/domains/domain.events.ts';
import type { PlanSlotResource } from '../domain/plan-slots/plan-slot.events.ts';
import type { TemplateVariable } from '../domain/templates/template.events.ts';
import type { TopicReader } from '../domain/topics/topic-reach.ts';
import type { AuthContext } from '../platform/auth/auth-context.ts';
import type { Database } from '../platform/db/database.ts';
import type { Mode } from '../platform/eventstore/types.ts';
import type { Services, SharedLookup } from '../platform/services.ts';
import type { Tenant } from '../platform/tenancy.ts';

/**
 * What the write side asks of the read models, in its own terms. The composition root passes read-side's query
 * functions (bin/look-ups.ts); TypeScript checks there that each fits the signature declared here. A member
 * declares only what the write side reads of the answer.
 */
declare module '../platform/services.ts' {
  interface LookUps {
    /** The active suppression with this id, or null. */
    findSuppression(db: Database, tenant: Tenant, suppressionId: string): Promise<{ email: string } | null>;
    /** The unpurged received emails (of any organization) whose raw message is `rawKey`, stored around `createdAt`. */
    receivedEmailsSharingRaw(
      db: Database,
      rawKey: string,
      createdAt: Date,
    ): Promise<{ id: string; org_id: string; mode: Mode }[]>;
    /** The received email as `GET /v1/emails/received/{id}` answers it, or null. */
    receivedEmailAnswer(services: Services, tenant: Tenant, id: string): Promise<unknown>;
    /** The webhook as `GET /v1/webhooks/{id}` answers it, or null. */
    getWebhook(db: Database, tenant: Tenant, webhookId: string): Promise<{ id: string } | null>;
    /** A delivery of the webhook, as its delivery log lists it, or null. */
    findDelivery(
      db: Database,
      tenant: Tenant,
      webhookId: string,
      deliveryId: string,
    ): Promise<{ id: string } | null>;
    findTopic(
      db: Database,
      tenant: Tenant,
      topicId: string,
    ): Promise<{ id: string; name: string; default_subscription: 'opt_in' | 'opt_out' } | null>;
    /** The template's published version (or `versionId`), as the sending path renders it. */
    findPublishedVersion(
      db: Database,
      tenant: Tenant,
      templateId: string,
      versionId?: string,
    ): Promise<
      | { status: 'not_found' }
      | { status: 'not_published' }
      | { status: 'published'; version: PublishedTemplate }
    >;
    /** The audience, or null (unknown, deleted, another tenant's). */
    findAudience(db: Database, tenant: Tenant, audienceId: string): Promise<{ id: string } | null>;
    /** The email as `GET /v1/emails/{id}` answers it, or null. */
    getEmail(db: Database, tenant: Tenant, emailId: string): Promise<object | null>;
    /** The broadcast as `GET /v1/broadcasts/{id}` answers it, or null. */
    findBroadcast(db: Database, tenant: Tenant, broadcastId: string): Promise<object | null>;
    /** A scheduled or sending broadcast of the tenant whose content names the template, topic or audience, or null. */
    broadcastUsing(
      db: Database,
      tenant: Tenant,
      resource: BroadcastResource,
      resourceId: string,
    ): Promise<{ id: string; status: string } | null>;
    /** The contact as `GET /v1/contacts/{id}` answers it, or null. */
    findContact(
      db: Database,
      tenant: Tenant,
      contactId: string,
    ): Promise<{ email: string; unsubscribed: boolean; audience_ids: string[] } | null>;
    /** The contact's choice for every topic of its tenant, as `GET /v1/contacts/{id}/topics` answers it. */
    contactTopics(db: Database, tenant: Tenant, contactId: string): Promise<ContactTopicsLookUp>;
    /** The contacts among the addresses (lower case), with their unsubscribed flag and choice for the topic. */
    topicReaders(
      db: Database,
      tenant: Tenant,
      topicId: string,
      addresses: string[],
    ): Promise<({ email_lower: string } & TopicReader)[]>;
    /** The id of the contact a path names by its id or its address, or null. */
    contactIdOf(db: Database, tenant: Tenant, named: string): Promise<string | null>;
    /** The import as `GET /v1/contact-imports/{id}` answers it, or null. */
    findContactImport(db: Database, tenant: Tenant, importId: string): Promise<object | null>;
    /** The template as `GET /v1/templates/{id}` answers it, or null. */
    getTemplate(db: Database, tenant: Tenant, templateId: string): Promise<object | null>;
    /** Whether the organization records who opened and clicked (client details). */
    tracksClientDetails(db: Database, orgId: string): Promise<boolean>;
    /** The domain as `GET /v1/domains/{id}` answers it, or null. */
    findApiDomain(db: Database, tenant: Tenant, domainId: string): Promise<{ id: string } | null>;
    /** The ids of the organization's resources of a kind that count toward its plan (not deleted). */
    countedResourceIds(db: Database, tenant: Tenant, resource: PlanSlotResource): Promise<string[]>;
    /** The emails accepted in the month (`YYYY-MM`, UTC) in the tenant's mode, as GET /v1/usage counts them. */
    monthlyUsage(db: Database, tenant: Tenant, month: string): Promise<number>;
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
    /** The domain of the organization and mode a From address names (any case, Unicode or punycode), or null. */
    sendingDomains: SharedLookup<[tenant: Tenant, name: string], SendingDomainLookUp | null>;
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

/** What a broadcast's content names, besides its domain. */
export type BroadcastResource = 'template' | 'topic' | 'audience';

/** A contact's topic choices, as the API lists them. */
export interface ContactTopicsLookUp {
  object: string;
  data: { id: string; name: string; description: string | null; subscription: 'opt_in' | 'opt_out' }[];
  has_more: boolean;
}

/** What a send reads of its sending domain. */
export interface SendingDomainLookUp {
  id: string;
  name: string;
  canSendLive: boolean;
  returnPathDomain: string;
  customReturnPath: boolean;
  impressum: Impressum | null;
}

/** What rendering reads of a template's version. */
export interface PublishedTemplate {
  templateId: string;
  versionId: string;
  subject: string;
  html: string | null;
  text: string | null;
  variables: TemplateVariable[];
}
