import { blobRowMigrations } from '../platform/blob-rows.ts';
import type { Migration } from '../platform/db/migrations.ts';
import { checkpointMigrations } from '../platform/eventstore/checkpoints.ts';
import { parkedEventsMigrations } from '../platform/eventstore/parked-events.ts';
import { rateLimitMigrations } from '../platform/http/rate-limit.ts';
import { personalDataMigrations } from '../platform/personal-data.ts';
import { broadcastExpansionMigrations } from '../processes/broadcasts/broadcast-expansions.schema.ts';
import { contactImportMigrations } from '../processes/contact-import/contact-import-jobs.schema.ts';
import { deliveryMigrations } from '../processes/delivery/delivery-jobs.schema.ts';
import { egressMigrations } from '../processes/delivery/egress/egress.schema.ts';
import { mtaStsMigrations } from '../processes/delivery/mta-sts/mta-sts.schema.ts';
import { shapingMigrations } from '../processes/delivery/shaping/shaping.schema.ts';
import { schedulerMigrations } from '../processes/scheduler/scheduled-emails.schema.ts';
import { simulatorMigrations } from '../processes/simulator/simulator-steps.schema.ts';
import { suppressionPolicyMigrations } from '../processes/suppression-policy/suppressions-due.schema.ts';
import { webhookProcessMigrations } from '../processes/webhooks/webhooks.schema.ts';
import { apiKeysMigrations } from '../read-side/api-keys/api-keys.schema.ts';
import { audiencesMigrations } from '../read-side/audiences/audiences.schema.ts';
import { broadcastsMigrations } from '../read-side/broadcasts/broadcasts.schema.ts';
import { contactImportsMigrations } from '../read-side/contact-imports/contact-imports.schema.ts';
import { contactsMigrations } from '../read-side/contacts/contacts.schema.ts';
import { dmarcReportsMigrations } from '../read-side/dmarc-reports/dmarc-reports.schema.ts';
import { domainsMigrations } from '../read-side/domains/domains.schema.ts';
import { emailsMigrations } from '../read-side/emails/emails.schema.ts';
import { queueMigrations } from '../read-side/queue/queue.schema.ts';
import { receivedEmailsMigrations } from '../read-side/received-emails/received-emails.schema.ts';
import { suppressionsMigrations } from '../read-side/suppressions/suppressions.schema.ts';
import { templatesMigrations } from '../read-side/templates/templates.schema.ts';
import { topicsMigrations } from '../read-side/topics/topics.schema.ts';
import { deliveryLogMigrations } from '../read-side/webhooks/delivery-log.schema.ts';
import { webhooksMigrations } from '../read-side/webhooks/webhooks.schema.ts';

/**
 * Every table's migrations, in the order they are applied: the platform's own, the read models' and the processes'
 * tables. Imported from the modules that hold the SQL (the `*.schema.ts` files, and platform modules that keep
 * their tables beside their code), never from a route or a process, so that an operator's command can migrate and
 * open the stores without loading the service's routes and processes (composition.ts).
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
