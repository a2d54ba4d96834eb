import type { LookUps } from '../platform/services.ts';
import { tracksClientDetails } from '../read-side/api-keys/api-keys.queries.ts';
import { findAudience } from '../read-side/audiences/audiences.queries.ts';
import { broadcastUsing, findBroadcast } from '../read-side/broadcasts/broadcasts.queries.ts';
import { findContactImport } from '../read-side/contact-imports/contact-imports.queries.ts';
import {
  contactIdOf,
  contactTopics,
  findContact,
  topicReaders,
} from '../read-side/contacts/contacts.queries.ts';
import { findApiDomain } from '../read-side/domains/domains.queries.ts';
import { getEmail, monthlyUsage } from '../read-side/emails/emails.queries.ts';
import { countedResourceIds } from '../read-side/plan-slots/plan-slots.queries.ts';
import {
  findReceivedEmail,
  receivedEmailJson,
  receivedEmailsSharingRaw,
} from '../read-side/received-emails/received-emails.queries.ts';
import { findSuppression } from '../read-side/suppressions/suppressions.queries.ts';
import { findPublishedVersion, getTemplate } from '../read-side/templates/templates.queries.ts';
import { findTopic } from '../read-side/topics/topics.queries.ts';
import { findDelivery, getWebhook } from '../read-side/webhooks/webhooks.queries.ts';

/** The read-side query functions the write side is given (write-side/look-ups.ts declares what each must be). */
export const lookUps: LookUps = {
  findTopic,
  findSuppression,
  receivedEmailsSharingRaw,
  async receivedEmailAnswer(services, tenant, id) {
    const row = await findReceivedEmail(services.db, tenant, id);
    return row ? receivedEmailJson(services, row) : null;
  },
  getWebhook,
  findDelivery,
  findPublishedVersion,
  getEmail,
  findBroadcast,
  broadcastUsing,
  findContact,
  contactTopics,
  topicReaders,
  contactIdOf,
  findContactImport,
  getTemplate,
  tracksClientDetails,
  findAudience,
  findApiDomain,
  countedResourceIds,
  monthlyUsage,
};
