import type { Mode } from '../../platform/eventstore/types.ts';

/** Why an endpoint stopped receiving deliveries without its owner asking. */
export type DisabledReason = 'endpoint_gone' | 'consecutive_failures';

/** A replaced signing secret (sealed) that keeps signing until `validUntil`. */
export interface RetiringSecret {
  sealedSecret: string;
  validUntil: string;
}

/**
 * The webhook aggregate's events, stream `webhook-<wh_id>`. Signing secrets appear only sealed
 * (services.secrets.seal()), never in clear. Exhaustion and automatic disabling are recorded here too, by the
 * dispatcher, so the endpoint's history explains itself.
 */
export type WebhookEvent =
  | {
      type: 'WebhookCreated';
      data: {
        webhookId: string;
        orgId: string;
        mode: Mode;
        url: string;
        events: string[];
        active: boolean;
        sealedSecret: string;
        createdAt: string;
      };
    }
  /** The whole new configuration; `active: true` after a disable also clears the disabled reason. */
  | {
      type: 'WebhookUpdated';
      data: { webhookId: string; url: string; events: string[]; active: boolean; updatedAt: string };
    }
  | {
      type: 'WebhookSecretRotated';
      data: {
        webhookId: string;
        sealedSecret: string;
        /** Keeps signing alongside the new one until `previousValidUntil`, so receivers can switch without losses. */
        previousSealedSecret: string;
        previousValidUntil: string;
        /**
         * The secrets replaced by earlier rotations whose overlap had not ended at this one, newest first: each
         * keeps signing until its own `validUntil`, as its rotation promised. Absent: none (events recorded before
         * several previous secrets were kept).
         */
        olderSecrets?: RetiringSecret[];
        rotatedAt: string;
      };
    }
  | {
      type: 'WebhookDisabled';
      data: { webhookId: string; reason: DisabledReason; detail: string; disabledAt: string };
    }
  | {
      type: 'WebhookDeliveryExhausted';
      data: {
        webhookId: string;
        deliveryId: string;
        eventType: string;
        attempts: number;
        exhaustedAt: string;
      };
    }
  | {
      type: 'WebhookDeliveryRetryRequested';
      data: { webhookId: string; deliveryId: string; requestedAt: string };
    }
  | {
      type: 'WebhookReplayRequested';
      data: { webhookId: string; replayId: string; since: string; until: string | null; requestedAt: string };
    }
  | { type: 'WebhookDeleted'; data: { webhookId: string; deletedAt: string } };

export const webhookStream = (webhookId: string) => `webhook-${webhookId}`;

export const WEBHOOK_EVENT_TYPES: WebhookEvent['type'][] = [
  'WebhookCreated',
  'WebhookUpdated',
  'WebhookSecretRotated',
  'WebhookDisabled',
  'WebhookDeliveryExhausted',
  'WebhookDeliveryRetryRequested',
  'WebhookReplayRequested',
  'WebhookDeleted',
];

export const isWebhookEvent = (e: { type: string }): e is WebhookEvent =>
  (WEBHOOK_EVENT_TYPES as string[]).includes(e.type);

/** The shape of a webhook's id (`wh_`) and of a delivery's (`whl_`): anything else names none. */
export const WEBHOOK_ID = /^wh_[0-9a-z]{26}$/;
export const DELIVERY_ID = /^whl_[0-9a-z]{26}$/;
