import { randomBytes } from 'node:crypto';
import { PLANS } from '../../domain/organizations/plans.ts';
import { webhookDecider } from '../../domain/webhooks/webhook.decider.ts';
import type { DisabledReason } from '../../domain/webhooks/webhook.events.ts';
import { webhookStream } from '../../domain/webhooks/webhook.events.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import type { Plan } from '../../platform/tenancy.ts';
import { freeSlot, type PlanSlotKind, withPlanSlot } from '../plan-slots/plan-slot.commands.ts';

type Deps = Pick<Services, 'store' | 'clock' | 'secrets'>;

/** Webhook endpoints per organization and mode, by plan (spec, Limits). null: unlimited. */

/** Endpoints count against the plan until deleted; a disabled one still counts. */
export const WEBHOOK_SLOTS: PlanSlotKind = {
  resource: 'webhooks',
  streamOf: webhookStream,
  releasedBy: ['WebhookDeleted'],
};

/** `whsec_` + base64 of 32 random bytes (Standard Webhooks asks for 24 to 64). */
export const generateSigningSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

const at = (services: Pick<Services, 'clock'>) => services.clock.now().toISOString();

export interface NewWebhook {
  url: string;
  events: string[];
  active: boolean;
}

/**
 * Creates the endpoint within the plan's limit (the API's way): takes a plan slot first (write-side/plan-slots),
 * so two creates racing for the last one cannot both pass. The secret is returned in clear only here.
 */
export async function addWebhook(
  services: Deps & Pick<Services, 'db' | 'lookUps'>,
  meta: EventMetadata,
  plan: Plan,
  input: NewWebhook,
) {
  const webhookId = newId('wh', services.clock.now().getTime());
  const limit = PLANS[plan].webhooks;
  const refusal =
    `Your plan allows ${limit} webhook endpoint${limit === 1 ? '' : 's'}; ` + 'delete one or upgrade.';
  return withPlanSlot(services, meta, WEBHOOK_SLOTS, { id: webhookId, limit, refusal }, (held) =>
    createWebhook(services, meta, plan, held, input, webhookId),
  );
}

/**
 * Creates the endpoint, trusting the caller's count of existing ones and taking no plan slot: for tooling on
 * unlimited plans (bench). The secret is returned in clear only here, and stored sealed.
 */
export async function createWebhook(
  services: Deps,
  meta: EventMetadata,
  plan: Plan,
  existingEndpoints: number,
  input: NewWebhook,
  webhookId = newId('wh', services.clock.now().getTime()),
) {
  const secret = generateSigningSecret();
  const result = await handleCommand(
    services.store,
    webhookStream(webhookId),
    webhookDecider,
    {
      type: 'CreateWebhook',
      webhookId,
      orgId: meta.orgId,
      mode: meta.mode,
      ...input,
      sealedSecret: services.secrets.seal(secret),
      existingEndpoints,
      planLimit: PLANS[plan].webhooks,
      at: at(services),
    },
    meta,
  );
  return { webhookId, secret, position: result.position };
}

const caller = (services: Deps, meta: EventMetadata, webhookId: string) => ({
  webhookId,
  orgId: meta.orgId,
  mode: meta.mode,
  at: at(services),
});

export async function updateWebhook(
  services: Deps,
  meta: EventMetadata,
  webhookId: string,
  changes: Partial<NewWebhook>,
) {
  const result = await handleCommand(
    services.store,
    webhookStream(webhookId),
    webhookDecider,
    { type: 'UpdateWebhook', ...caller(services, meta, webhookId), ...changes },
    meta,
  );
  return { position: result.position };
}

/** `overlapMs`: how long the replaced secrets may still sign, at most (the decider's default: 24 hours). */
export async function rotateWebhookSecret(
  services: Deps,
  meta: EventMetadata,
  webhookId: string,
  overlapMs?: number,
) {
  const secret = generateSigningSecret();
  const result = await handleCommand(
    services.store,
    webhookStream(webhookId),
    webhookDecider,
    {
      type: 'RotateWebhookSecret',
      ...caller(services, meta, webhookId),
      sealedSecret: services.secrets.seal(secret),
      overlapMs,
    },
    meta,
  );
  const rotated = result.events[0];
  const previousValidUntil = rotated.type === 'WebhookSecretRotated' ? rotated.data.previousValidUntil : null;
  return { secret, previousValidUntil, position: result.position };
}

export async function deleteWebhook(services: Deps, meta: EventMetadata, webhookId: string) {
  const result = await handleCommand(
    services.store,
    webhookStream(webhookId),
    webhookDecider,
    { type: 'DeleteWebhook', ...caller(services, meta, webhookId) },
    meta,
  );
  await freeSlot(services, meta, WEBHOOK_SLOTS, webhookId);
  return { position: result.position };
}

export async function requestDeliveryRetry(
  services: Deps,
  meta: EventMetadata,
  webhookId: string,
  deliveryId: string,
) {
  const c = caller(services, meta, webhookId);
  const result = await handleCommand(
    services.store,
    webhookStream(webhookId),
    webhookDecider,
    { type: 'RequestDeliveryRetry', ...c, deliveryId },
    meta,
  );
  return { requestedAt: c.at, position: result.position };
}

export async function requestWebhookReplay(
  services: Deps,
  meta: EventMetadata,
  webhookId: string,
  window: { since: string; until: string | null },
) {
  const replayId = newId('whr', services.clock.now().getTime());
  const c = caller(services, meta, webhookId);
  const result = await handleCommand(
    services.store,
    webhookStream(webhookId),
    webhookDecider,
    { type: 'RequestWebhookReplay', ...c, replayId, ...window },
    meta,
  );
  return { replayId, requestedAt: c.at, position: result.position };
}

/** The dispatcher's verdicts, recorded on the webhook's stream. */
export async function disableWebhook(
  services: Pick<Services, 'store' | 'clock'>,
  meta: EventMetadata,
  webhookId: string,
  reason: DisabledReason,
  detail: string,
) {
  await handleCommand(
    services.store,
    webhookStream(webhookId),
    webhookDecider,
    { type: 'DisableWebhook', webhookId, reason, detail, at: at(services) },
    meta,
  );
}

export async function recordDeliveryExhausted(
  services: Pick<Services, 'store' | 'clock'>,
  meta: EventMetadata,
  delivery: { webhookId: string; deliveryId: string; eventType: string; attempts: number },
) {
  await handleCommand(
    services.store,
    webhookStream(delivery.webhookId),
    webhookDecider,
    { type: 'RecordDeliveryExhausted', ...delivery, at: at(services) },
    meta,
  );
}
