import type { Database } from '../platform/db/database.ts';
import type { Mode } from '../platform/eventstore/types.ts';
import type { Services } from '../platform/services.ts';
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
  }
}
