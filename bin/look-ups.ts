import type { LookUps } from '../platform/services.ts';
import {
  findReceivedEmail,
  receivedEmailJson,
  receivedEmailsSharingRaw,
} from '../read-side/received-emails/received-emails.queries.ts';
import { findSuppression } from '../read-side/suppressions/suppressions.queries.ts';
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
};
