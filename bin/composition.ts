import type express from 'express';
import { Redis } from 'ioredis';
import { blobRowMigrations } from '../platform/blob-rows.ts';
import type { Config } from '../platform/config.ts';
import type { Database } from '../platform/db/database.ts';
import type { Migration } from '../platform/db/migrations.ts';
import { queueDepth } from '../platform/due/due-sql.ts';
import { AppError } from '../platform/errors.ts';
import { checkpointMigrations } from '../platform/eventstore/checkpoints.ts';
import { parkedEventsMigrations } from '../platform/eventstore/parked-events.ts';
import { mountMetrics, type QueueDepths } from '../platform/http/metrics-endpoint.ts';
import {
  PostgresRateLimiter,
  type RateLimiter,
  RedisRateLimiter,
  rateLimitMigrations,
} from '../platform/http/rate-limit.ts';
import { publicRateLimit } from '../platform/http/rate-limit-middleware.ts';
import type { ApiRouter } from '../platform/http/router.ts';
import type { Logger } from '../platform/logger.ts';
import { personalDataMigrations } from '../platform/personal-data.ts';
import type { Services } from '../platform/services.ts';
import {
  BROADCAST_EXPANSIONS,
  BroadcastExpansionProcess,
  broadcastExpansionMigrations,
} from '../processes/broadcasts/broadcast-expansion.process.ts';
import {
  CONTACT_IMPORT_JOBS,
  ContactImportProcess,
  contactImportMigrations,
} from '../processes/contact-import/contact-import.process.ts';
import { DeliveryProcess, deliveryMigrations } from '../processes/delivery/delivery.process.ts';
import { deliveryJobs } from '../processes/delivery/delivery-jobs.ts';
import { egressMigrations } from '../processes/delivery/egress/egress-table.ts';
import { mtaStsMigrations } from '../processes/delivery/mta-sts/mta-sts.schema.ts';
import { TlsReportProcess } from '../processes/delivery/mta-sts/tls-report.process.ts';
import { QueueControlsProcess } from '../processes/delivery/queue-controls.process.ts';
import { queueMessageCounts, queueRows, recentReplies } from '../processes/delivery/queue-view.ts';
import { shapingMigrations } from '../processes/delivery/shaping/shaping-table.ts';
import { DomainVerifierProcess } from '../processes/domain-verifier/domain-verifier.process.ts';
import type { BackgroundProcess } from '../processes/process.ts';
import { RetentionProcess } from '../processes/retention/retention.process.ts';
import {
  SCHEDULED_EMAILS,
  SchedulerProcess,
  schedulerMigrations,
} from '../processes/scheduler/scheduler.process.ts';
import { SimulatorProcess, simulatorMigrations } from '../processes/simulator/simulator.process.ts';
import {
  SUPPRESSIONS_DUE,
  SuppressionPolicyProcess,
  suppressionPolicyMigrations,
} from '../processes/suppression-policy/suppression-policy.process.ts';
import { dueDeliveries } from '../processes/webhooks/deliveries.ts';
import { WebhookDispatcher } from '../processes/webhooks/dispatcher.process.ts';
import { EmailSummariesPurgeProcess } from '../processes/webhooks/email-summaries-purge.process.ts';
import { WebhookFanOut } from '../processes/webhooks/fan-out.process.ts';
import { webhookProcessMigrations } from '../processes/webhooks/webhooks.schema.ts';
import { apiKeyQueryRoutes } from '../read-side/api-keys/api-keys.routes.ts';
import { apiKeysMigrations } from '../read-side/api-keys/api-keys.schema.ts';
import { audienceQueryRoutes } from '../read-side/audiences/audiences.routes.ts';
import { audiencesMigrations } from '../read-side/audiences/audiences.schema.ts';
import { broadcastQueryRoutes } from '../read-side/broadcasts/broadcasts.routes.ts';
import { broadcastsMigrations } from '../read-side/broadcasts/broadcasts.schema.ts';
import { contactImportQueryRoutes } from '../read-side/contact-imports/contact-imports.routes.ts';
import { contactImportsMigrations } from '../read-side/contact-imports/contact-imports.schema.ts';
import { contactQueryRoutes } from '../read-side/contacts/contacts.routes.ts';
import { contactsMigrations } from '../read-side/contacts/contacts.schema.ts';
import { dmarcReportQueryRoutes } from '../read-side/dmarc-reports/dmarc-reports.routes.ts';
import { dmarcReportsMigrations } from '../read-side/dmarc-reports/dmarc-reports.schema.ts';
import { findDomainById } from '../read-side/domains/domains.queries.ts';
import { domainQueryRoutes } from '../read-side/domains/domains.routes.ts';
import { domainsMigrations } from '../read-side/domains/domains.schema.ts';
import { emailQueryRoutes } from '../read-side/emails/emails.routes.ts';
import { emailsMigrations } from '../read-side/emails/emails.schema.ts';
import { organizationQueryRoutes } from '../read-side/organizations/organizations.routes.ts';
import { queueQueryRoutes } from '../read-side/queue/queue.routes.ts';
import { queueMigrations } from '../read-side/queue/queue.schema.ts';
import { receivedEmailQueryRoutes } from '../read-side/received-emails/received-emails.routes.ts';
import { receivedEmailsMigrations } from '../read-side/received-emails/received-emails.schema.ts';
import { suppressionQueryRoutes } from '../read-side/suppressions/suppressions.routes.ts';
import { suppressionsMigrations } from '../read-side/suppressions/suppressions.schema.ts';
import { templateQueryRoutes } from '../read-side/templates/templates.routes.ts';
import { templatesMigrations } from '../read-side/templates/templates.schema.ts';
import { topicQueryRoutes } from '../read-side/topics/topics.routes.ts';
import { topicsMigrations } from '../read-side/topics/topics.schema.ts';
import { deliveryLogMigrations } from '../read-side/webhooks/delivery-log.schema.ts';
import { webhookQueryRoutes } from '../read-side/webhooks/webhooks.routes.ts';
import { webhooksMigrations } from '../read-side/webhooks/webhooks.schema.ts';
import { apiKeyCommandRoutes } from '../write-side/api-keys/api-key.routes.ts';
import { audienceCommandRoutes } from '../write-side/audiences/audience.routes.ts';
import { broadcastCommandRoutes } from '../write-side/broadcasts/broadcast.routes.ts';
import { mountUnsubscribe } from '../write-side/broadcasts/unsubscribe.routes.ts';
import { contactImportCommandRoutes } from '../write-side/contact-imports/contact-import.routes.ts';
import { contactCommandRoutes } from '../write-side/contacts/contact.routes.ts';
import { domainCommandRoutes } from '../write-side/domains/domain.routes.ts';
import { emailCommandRoutes } from '../write-side/emails/email.routes.ts';
import { mountTracking } from '../write-side/emails/tracking.routes.ts';
import { receivedEmailCommandRoutes } from '../write-side/received-emails/received-email.routes.ts';
import { suppressionCommandRoutes } from '../write-side/suppressions/suppression.routes.ts';
import { templateCommandRoutes } from '../write-side/templates/template.routes.ts';
import { topicCommandRoutes } from '../write-side/topics/topic.routes.ts';
import { webhookCommandRoutes } from '../write-side/webhooks/webhook.routes.ts';

/**
 * The composition root's lists: every read-model migration, projection, route set and background process.
 * A new resource adds its lines here and nowhere else in bin/.
 */
export const migrations: Migration[] = [
  ...checkpointMigrations,
  ...blobRowMigrations,
  ...parkedEventsMigrations,
  ...rateLimitMigrations,
  ...apiKeysMigrations,
  ...domainsMigrations,
  ...templatesMigrations,
  ...suppressionsMigrations,
  ...topicsMigrations,
  ...audiencesMigrations,
  ...personalDataMigrations,
  ...contactsMigrations,
  ...broadcastsMigrations,
  ...contactImportsMigrations,
  ...emailsMigrations,
  ...receivedEmailsMigrations,
  ...dmarcReportsMigrations,
  ...schedulerMigrations,
  ...broadcastExpansionMigrations,
  ...simulatorMigrations,
  ...deliveryMigrations,
  ...queueMigrations,
  ...shapingMigrations,
  ...mtaStsMigrations,
  ...egressMigrations,
  ...suppressionPolicyMigrations,
  ...webhooksMigrations,
  ...deliveryLogMigrations,
  ...webhookProcessMigrations,
  ...contactImportMigrations,
];

export function registerRoutes(api: ApiRouter, services: Services): void {
  apiKeyCommandRoutes(api, services, async (auth, domainId) => {
    if (!(await findDomainById(services.db, auth, domainId))) {
      throw new AppError('validation_error', `\`domain_id\`: domain ${domainId} not found`);
    }
  });
  apiKeyQueryRoutes(api, services);
  organizationQueryRoutes(api, services);
  domainCommandRoutes(api, services);
  domainQueryRoutes(api, services);
  dmarcReportQueryRoutes(api, services);
  // Command routes first: POST /templates/render is a fixed path, never a template id.
  templateCommandRoutes(api, services);
  templateQueryRoutes(api, services);
  suppressionCommandRoutes(api, services);
  suppressionQueryRoutes(api, services);
  topicCommandRoutes(api, services);
  topicQueryRoutes(api, services);
  audienceCommandRoutes(api, services);
  audienceQueryRoutes(api, services);
  contactCommandRoutes(api, services);
  contactQueryRoutes(api, services);
  broadcastCommandRoutes(api, services);
  broadcastQueryRoutes(api, services);
  contactImportCommandRoutes(api, services);
  contactImportQueryRoutes(api, services);
  webhookCommandRoutes(api, services);
  webhookQueryRoutes(api, services);
  queueQueryRoutes(api, services, { rows: queueRows, replies: recentReplies });
  // Emails last: GET /emails/:email_id would otherwise shadow fixed paths such as /emails/received.
  receivedEmailCommandRoutes(api, services);
  receivedEmailQueryRoutes(api, services);
  emailCommandRoutes(api, services);
  emailQueryRoutes(api, services);
}

/** The work queues `postline_queue_depth` reports, each a count of its process's table. */
const queueDepths: QueueDepths = {
  deliveries_due: (db, now) => queueDepth(db, deliveryJobs(), now),
  webhook_attempts_due: (db, now) => queueDepth(db, dueDeliveries(), now),
  scheduled_emails: (db) => queueDepth(db, SCHEDULED_EMAILS),
  broadcast_expansions: (db) => queueDepth(db, BROADCAST_EXPANSIONS),
  contact_imports: (db) => queueDepth(db, CONTACT_IMPORT_JOBS),
  suppressions_due: (db, now) => queueDepth(db, SUPPRESSIONS_DUE, now),
};

/**
 * Handlers outside /v1 (no API key): metrics (their own token), attachment downloads by signed URL, tracking pixel
 * and click redirects, and the unsubscribe links of broadcasts.
 */
export function mountHandlers(app: express.Express, services: Services): void {
  mountOperations(app, services);
  app.use(['/blobs', '/t', '/unsubscribe'], publicRateLimit(services));
  services.blobs.mount(app, () => services.clock.now());
  mountTracking(app, services);
  mountUnsubscribe(app, services);
}

/** What a process without the `api` role serves beside /healthz and /readyz: its metrics. */
export function mountOperations(app: express.Express, services: Services): void {
  mountMetrics(app, services, queueDepths, queueMessageCounts);
}

export function backgroundProcesses(services: Services): BackgroundProcess[] {
  return [
    new DomainVerifierProcess(services),
    new RetentionProcess(services),
    new WebhookFanOut(services),
    new EmailSummariesPurgeProcess(services),
    new WebhookDispatcher(services),
    new SchedulerProcess(services),
    new BroadcastExpansionProcess(services),
    new SimulatorProcess(services),
    new DeliveryProcess(services),
    new SuppressionPolicyProcess(services),
    new ContactImportProcess(services),
    new QueueControlsProcess(services),
    new TlsReportProcess(services),
  ];
}

export function createRateLimiter(config: Config, db: Database, log?: Logger): RateLimiter {
  if (config.REDIS_URL)
    // Auto-pipelining: the counts of requests arriving together go to Redis in one write. A count Redis does not
    // answer within commandTimeout (a connection lost without a word) is answered 503, not waited for.
    return new RedisRateLimiter(
      new Redis(config.REDIS_URL, {
        lazyConnect: false,
        maxRetriesPerRequest: 2,
        commandTimeout: 1000,
        enableAutoPipelining: true,
      }),
      log,
    );
  return new PostgresRateLimiter(db);
}
