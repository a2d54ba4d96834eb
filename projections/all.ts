/**
 * Every projection, in the order the runner starts them. Its own module, so that the projections thread
 * (bin/projections.worker.ts) loads only what projecting needs, not the routes and processes of the composition.
 */
import { apiKeysProjection } from './api-keys.projection.ts';
import { audiencesProjection } from './audiences.projection.ts';
import { broadcastsProjection } from './broadcasts.projection.ts';
import { contactImportsProjection } from './contact-imports.projection.ts';
import { contactsProjection } from './contacts.projection.ts';
import { deliveryPausesProjection } from './delivery-pauses.projection.ts';
import { dmarcReportsProjection } from './dmarc-reports.projection.ts';
import { domainsProjection } from './domains.projection.ts';
import { emailLinksProjection } from './email-links.projection.ts';
import { emailUnsubscribesProjection } from './email-unsubscribes.projection.ts';
import { emailsProjection } from './emails.projection.ts';
import type { Projection } from './projection.ts';
import { receivedEmailsProjection } from './received-emails.projection.ts';
import { suppressionsProjection } from './suppressions.projection.ts';
import { templatesProjection } from './templates.projection.ts';
import { topicsProjection } from './topics.projection.ts';
import { webhooksProjection } from './webhooks.projection.ts';

export const projections: Projection[] = [
  apiKeysProjection,
  domainsProjection,
  templatesProjection,
  suppressionsProjection,
  topicsProjection,
  audiencesProjection,
  contactsProjection,
  broadcastsProjection,
  contactImportsProjection,
  emailsProjection,
  emailLinksProjection,
  emailUnsubscribesProjection,
  receivedEmailsProjection,
  dmarcReportsProjection,
  webhooksProjection,
  deliveryPausesProjection,
];
