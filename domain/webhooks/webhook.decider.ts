import { AppError, notFound } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { DataOf } from '../../platform/eventstore/types.ts';
import type { CommandCaller } from '../../platform/tenancy.ts';
import type { DisabledReason, RetiringSecret, WebhookEvent } from './webhook.events.ts';

/** The previous secret keeps signing for this long after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3600_000;

/**
 * At most this many secrets sign a delivery (the current one and the replaced ones still in their overlap), so
 * that rotating in a loop cannot grow the `webhook-signature` header without end. A rotation past it ends the
 * overlap of the oldest replaced secret at once.
 */
export const MAX_SIGNING_SECRETS = 5;

type Caller = CommandCaller<'webhookId'>;

type Created = DataOf<WebhookEvent, 'WebhookCreated'>;

export type WebhookCommand =
  | (Caller &
      Omit<Created, keyof Caller | 'createdAt'> & {
        type: 'CreateWebhook';
        /** Endpoints the organization has in this mode, and its plan's allowance (null: unlimited). */
        existingEndpoints: number;
        planLimit: number | null;
      })
  | (Caller & { type: 'UpdateWebhook'; url?: string; events?: string[]; active?: boolean })
  | (Caller & { type: 'RotateWebhookSecret'; sealedSecret: string; overlapMs?: number })
  | (Caller & { type: 'DeleteWebhook' })
  | (Caller & { type: 'RequestDeliveryRetry'; deliveryId: string })
  | (Caller & { type: 'RequestWebhookReplay'; replayId: string; since: string; until: string | null })
  /** From the dispatcher (actor `system`): no caller to check. */
  | { type: 'DisableWebhook'; webhookId: string; reason: DisabledReason; detail: string; at: string }
  | {
      type: 'RecordDeliveryExhausted';
      webhookId: string;
      deliveryId: string;
      eventType: string;
      attempts: number;
      at: string;
    };

type Existing = { status: 'exists' | 'deleted' } & Omit<Created, 'webhookId' | 'createdAt'> & {
    /** The replaced secrets as the last rotation left them, newest first, with when their overlap ends. */
    retiring: RetiringSecret[];
  };

export type WebhookState = { status: 'none' } | Existing;

function owned(state: WebhookState, c: Caller): Existing {
  if (state.status !== 'exists' || state.orgId !== c.orgId || state.mode !== c.mode)
    throw notFound('Webhook', c.webhookId);
  return state;
}

function requireActive(state: Existing, webhookId: string) {
  if (!state.active) {
    throw new AppError(
      'webhook_inactive',
      `Webhook ${webhookId} is not active; enable it (PATCH active: true) first.`,
    );
  }
}

const sameList = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

type Command<T extends WebhookCommand['type']> = Extract<WebhookCommand, { type: T }>;

function createWebhook(command: Command<'CreateWebhook'>, state: WebhookState): WebhookEvent[] {
  if (state.status !== 'none') throw new AppError('conflict', `Webhook ${command.webhookId} already exists`);
  if (command.planLimit !== null && command.existingEndpoints >= command.planLimit) {
    throw new AppError(
      'plan_limit_exceeded',
      `Your plan allows ${command.planLimit} webhook endpoint${command.planLimit === 1 ? '' : 's'}; delete one or upgrade.`,
    );
  }
  const { webhookId, orgId, mode, url, events, active, sealedSecret, at } = command;
  return [
    {
      type: 'WebhookCreated',
      data: { webhookId, orgId, mode, url, events, active, sealedSecret, createdAt: at },
    },
  ];
}

function updateWebhook(command: Command<'UpdateWebhook'>, s: Existing): WebhookEvent[] {
  const next = {
    url: command.url ?? s.url,
    events: command.events ?? s.events,
    active: command.active ?? s.active,
  };
  if (next.url === s.url && sameList(next.events, s.events) && next.active === s.active) return [];
  return [{ type: 'WebhookUpdated', data: { webhookId: command.webhookId, ...next, updatedAt: command.at } }];
}

/**
 * The new secret signs from now on; the one it replaces keeps signing for the overlap (ROTATION_OVERLAP_MS unless
 * the command says less: 0 for a secret that leaked), and those replaced earlier keep signing until their own
 * overlap ends, and no longer than the replaced one, within MAX_SIGNING_SECRETS in all.
 */
function rotateSecret(command: Command<'RotateWebhookSecret'>, s: Existing): WebhookEvent[] {
  const now = Date.parse(command.at);
  const overlapEnds = now + (command.overlapMs ?? ROTATION_OVERLAP_MS);
  const previousValidUntil = new Date(overlapEnds).toISOString();
  const olderSecrets = s.retiring
    .map(({ sealedSecret, validUntil }) => ({
      sealedSecret,
      validUntil: Date.parse(validUntil) > overlapEnds ? previousValidUntil : validUntil,
    }))
    .filter((r) => Date.parse(r.validUntil) > now)
    .slice(0, MAX_SIGNING_SECRETS - 2);
  return [
    {
      type: 'WebhookSecretRotated',
      data: {
        webhookId: command.webhookId,
        sealedSecret: command.sealedSecret,
        previousSealedSecret: s.sealedSecret,
        previousValidUntil,
        olderSecrets,
        rotatedAt: command.at,
      },
    },
  ];
}

function requestReplay(command: Command<'RequestWebhookReplay'>): WebhookEvent[] {
  if (Date.parse(command.since) > Date.parse(command.at)) {
    throw new AppError('validation_error', '`since`: must not be in the future');
  }
  if (command.until !== null && Date.parse(command.until) < Date.parse(command.since)) {
    throw new AppError('validation_error', '`until`: must not be before `since`');
  }
  const { webhookId, replayId, since, until, at } = command;
  return [{ type: 'WebhookReplayRequested', data: { webhookId, replayId, since, until, requestedAt: at } }];
}

function disableWebhook(command: Command<'DisableWebhook'>, state: WebhookState): WebhookEvent[] {
  // Already off (by its owner, an earlier failure or deletion): nothing to record.
  if (state.status !== 'exists' || !state.active) return [];
  const { webhookId, reason, detail, at } = command;
  return [{ type: 'WebhookDisabled', data: { webhookId, reason, detail, disabledAt: at } }];
}

export const webhookDecider: Decider<WebhookCommand, WebhookEvent, WebhookState> = {
  initialState: { status: 'none' },
  evolve(state, event) {
    switch (event.type) {
      case 'WebhookCreated': {
        const { webhookId: _, createdAt: __, ...webhook } = event.data;
        return { status: 'exists', ...webhook, retiring: [] };
      }
      case 'WebhookUpdated':
        if (state.status === 'none') return state;
        return { ...state, url: event.data.url, events: event.data.events, active: event.data.active };
      case 'WebhookSecretRotated': {
        if (state.status === 'none') return state;
        const d = event.data;
        const previous = { sealedSecret: d.previousSealedSecret, validUntil: d.previousValidUntil };
        return { ...state, sealedSecret: d.sealedSecret, retiring: [previous, ...(d.olderSecrets ?? [])] };
      }
      case 'WebhookDisabled':
        return state.status === 'none' ? state : { ...state, active: false };
      case 'WebhookDeleted':
        return state.status === 'none' ? state : { ...state, status: 'deleted', active: false };
      default:
        return state;
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateWebhook':
        return createWebhook(command, state);
      case 'UpdateWebhook':
        return updateWebhook(command, owned(state, command));
      case 'RotateWebhookSecret':
        return rotateSecret(command, owned(state, command));
      case 'DeleteWebhook':
        owned(state, command);
        return [{ type: 'WebhookDeleted', data: { webhookId: command.webhookId, deletedAt: command.at } }];
      case 'RequestDeliveryRetry':
        requireActive(owned(state, command), command.webhookId);
        return [
          {
            type: 'WebhookDeliveryRetryRequested',
            data: { webhookId: command.webhookId, deliveryId: command.deliveryId, requestedAt: command.at },
          },
        ];
      case 'RequestWebhookReplay':
        requireActive(owned(state, command), command.webhookId);
        return requestReplay(command);
      case 'DisableWebhook':
        return disableWebhook(command, state);
      case 'RecordDeliveryExhausted': {
        if (state.status === 'none') return [];
        const { webhookId, deliveryId, eventType, attempts, at } = command;
        return [
          {
            type: 'WebhookDeliveryExhausted',
            data: { webhookId, deliveryId, eventType, attempts, exhaustedAt: at },
          },
        ];
      }
    }
  },
};
