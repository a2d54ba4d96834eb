import type { LookUps } from '../platform/services.ts';
import { findTopic } from '../read-side/topics/topics.queries.ts';
import { findDelivery, getWebhook } from '../read-side/webhooks/webhooks.queries.ts';

/** The read-side query functions the write side is given (write-side/look-ups.ts declares what each must be). */
export const lookUps: LookUps = {
  findTopic,
  getWebhook,
  findDelivery,
};
