import { z } from 'zod';
import { listOf, timestamp } from '../../platform/http/route-schema.ts';

const webhook = {
  id: z.string(),
  object: z.literal('webhook'),
  url: z.string(),
  events: z.array(z.string()),
  active: z.boolean(),
  disabled_reason: z.string().nullable(),
  disabled_detail: z.string().nullable(),
  disabled_at: timestamp.nullable(),
  consecutive_failures: z.int(),
  total_failures: z.int(),
  last_success_at: timestamp.nullable(),
  last_failure_at: timestamp.nullable(),
  secret_rotated_at: timestamp.nullable(),
  created_at: timestamp,
  updated_at: timestamp,
};
export const Webhook = z.strictObject(webhook).meta({ id: 'Webhook' });
export const WebhookList = listOf(Webhook, 'WebhookList');

/** Creation answers the signing secret once (`whsec_…`); it is never shown again but on rotation. */
export const CreatedWebhook = z
  .strictObject({ ...webhook, signing_secret: z.string() })
  .meta({ id: 'CreatedWebhook' });

export const RotatedSecret = z
  .strictObject({ id: z.string(), signing_secret: z.string(), previous_secret_expires_at: timestamp })
  .meta({ id: 'RotatedSecret' });

const Attempt = z.strictObject({
  attempt: z.int(),
  attempted_at: timestamp.nullable(),
  response_status: z.int().nullable(),
  latency_ms: z.number(),
  response_excerpt: z.string().nullable(),
  error: z.string().nullable(),
});

const WebhookDelivery = z
  .strictObject({
    id: z.string(),
    object: z.literal('webhook_delivery'),
    webhook_id: z.string(),
    event_type: z.string(),
    status: z.enum(['pending', 'succeeded', 'failed', 'exhausted', 'canceled']),
    next_attempt_at: timestamp.nullable(),
    last_response_status: z.int().nullable(),
    last_error: z.string().nullable(),
    payload: z.record(z.string(), z.unknown()),
    attempts: z.array(Attempt),
    created_at: timestamp,
    updated_at: timestamp,
    completed_at: timestamp.nullable(),
  })
  .meta({ id: 'WebhookDelivery' });
export const WebhookDeliveryList = listOf(WebhookDelivery, 'WebhookDeliveryList');

export const DeliveryRetry = z
  .strictObject({
    id: z.string(),
    object: z.literal('webhook_delivery'),
    webhook_id: z.string(),
    retry_requested_at: timestamp,
  })
  .meta({ id: 'DeliveryRetry' });

export const WebhookReplay = z
  .strictObject({
    id: z.string(),
    object: z.literal('webhook_replay'),
    webhook_id: z.string(),
    since: timestamp,
    until: timestamp.nullable(),
    requested_at: timestamp,
  })
  .meta({ id: 'WebhookReplay' });
