import type express from 'express';
import { queueDepth } from '../platform/due/due-sql.ts';
import { AppError } from '../platform/errors.ts';
import { mountMetrics, type QueueDepths } from '../platform/http/metrics-endpoint.ts';
import { publicRateLimit } from '../platform/http/rate-limit-middleware.ts';
import type { ApiRouter } from '../platform/http/router.ts';
import type { Services } from '../platform/services.ts';
import {
  BROADCAST_EXPANSIONS,
  BroadcastExpansionProcess,
} from '../processes/broadcasts/broadcast-expansion.process.ts';
import {
  CONTACT_IMPORT_JOBS,
  ContactImportProcess,
} from '../processes/contact-import/contact-import.process.ts';
import { DeliveryProcess } from '../processes/delivery/delivery.process.ts';
import { deliveryJobs } from '../processes/delivery/delivery-jobs.ts';
import { TlsReportProcess } from '../processes/delivery/mta-sts/tls-report.process.ts';
import { QueueControlsProcess } from '../processes/delivery/queue-controls.process.ts';
import { queueMessageCounts, queueRows, recentReplies } from '../processes/delivery/queue-view.ts';
import { DomainVerifierProcess } from '../processes/domain-verifier/domain-verifier.process.ts';
import type { BackgroundProcess } from '../processes/process.ts';
import { RetentionProcess } from '../processes/retention/retention.process.ts';
import { SCHEDULED_EMAILS, SchedulerProcess } from '../processes/scheduler/scheduler.process.ts';
import { SimulatorProcess } from '../processes/simulator/simulator.process.ts';
import {
  SUPPRESSIONS_DUE,
  SuppressionPolicyProcess,
} from '../processes/suppression-policy/suppression-policy.process.ts';
import { dueDeliveries } from '../processes/webhooks/deliveries.ts';
import { WebhookDispatcher } from '../processes/webhooks/dispatcher.process.ts';
import { EmailSummariesPurgeProcess } from '../processes/webhooks/email-summaries-purge.process.ts';
import { WebhookFanOut } from '../processes/webhooks/fan-out.process.ts';
import { apiKeyQueryRoutes } from '../read-side/api-keys/api-keys.routes.ts';
import { audienceQueryRoutes } from '../read-side/audiences/audiences.routes.ts';
import { broadcastQueryRoutes } from '../read-side/broadcasts/broadcasts.routes.ts';
import { contactImportQueryRoutes } from '../read-side/contact-imports/contact-imports.routes.ts';
import { contactQueryRoutes } from '../read-side/contacts/contacts.routes.ts';
import { dmarcReportQueryRoutes } from '../read-side/dmarc-reports/dmarc-reports.routes.ts';
import { findDomainById } from '../read-side/domains/domains.queries.ts';
import { domainQueryRoutes } from '../read-side/domains/domains.routes.ts';
import { emailQueryRoutes } from '../read-side/emails/emails.routes.ts';
import { organizationQueryRoutes } from '../read-side/organizations/organizations.routes.ts';
import { queueQueryRoutes } from '../read-side/queue/queue.routes.ts';
import { receivedEmailQueryRoutes } from '../read-side/received-emails/received-emails.routes.ts';
import { suppressionQueryRoutes } from '../read-side/suppressions/suppressions.routes.ts';
import { templateQueryRoutes } from '../read-side/templates/templates.routes.ts';
import { topicQueryRoutes } from '../read-side/topics/topics.routes.ts';
import { webhookQueryRoutes } from '../read-side/webhooks/webhooks.routes.ts';
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
 * The composition root's lists: every route set and background process (the migrations are in migrations.ts, the
 * projections in projections/all.ts). A new resource adds its lines here and there, and nowhere else in bin/. The
 * service loads this module only for a process that serves or runs processes: an operator's command does neither.
 */
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
