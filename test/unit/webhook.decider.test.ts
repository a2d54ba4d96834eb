import { describe, it } from 'vitest';
import { MAX_SIGNING_SECRETS, webhookDecider } from '../../domain/webhooks/webhook.decider.ts';
import type { WebhookEvent } from '../../domain/webhooks/webhook.events.ts';
import { itHidesFromOtherCallers, spec } from '../support/given-when-then.ts';

const at = '2026-01-01T00:00:00.000Z';
const later = '2026-01-02T00:00:00.000Z';
const caller = { webhookId: 'wh_1', orgId: 'org_1', mode: 'live' as const, at };

const created: WebhookEvent = {
  type: 'WebhookCreated',
  data: {
    webhookId: 'wh_1',
    orgId: 'org_1',
    mode: 'live',
    url: 'https://example.com/hooks',
    events: ['email.*'],
    active: true,
    sealedSecret: 'sealed-1',
    createdAt: at,
  },
};
const create = {
  type: 'CreateWebhook' as const,
  ...caller,
  url: created.data.url,
  events: created.data.events,
  active: true,
  sealedSecret: 'sealed-1',
  existingEndpoints: 0,
  planLimit: 1,
};
const disabled: WebhookEvent = {
  type: 'WebhookDisabled',
  data: { webhookId: 'wh_1', reason: 'endpoint_gone', detail: '410', disabledAt: later },
};
const deleted: WebhookEvent = { type: 'WebhookDeleted', data: { webhookId: 'wh_1', deletedAt: later } };

describe('webhook decider: create', () => {
  it('creates a webhook', () => spec(webhookDecider).given([]).when(create).then([created]));
  it('refuses beyond the plan quota', () =>
    spec(webhookDecider)
      .given([])
      .when({ ...create, existingEndpoints: 1 })
      .thenFails('plan_limit_exceeded', /1 webhook endpoint/));
  it('has no quota on an unlimited plan', () =>
    spec(webhookDecider)
      .given([])
      .when({ ...create, existingEndpoints: 500, planLimit: null })
      .then([created]));
  it('refuses to create twice', () =>
    spec(webhookDecider).given([created]).when(create).thenFails('conflict'));
});

describe('webhook decider: update', () => {
  const update = { type: 'UpdateWebhook' as const, ...caller, at: later };
  const updated = (events: string[]): WebhookEvent => ({
    type: 'WebhookUpdated',
    data: { webhookId: 'wh_1', url: created.data.url, events, active: true, updatedAt: later },
  });
  it('records the whole new configuration', () =>
    spec(webhookDecider)
      .given([created])
      .when({ ...update, events: ['email.bounced'] })
      .then([updated(['email.bounced'])]));
  it('records nothing when nothing changes', () =>
    spec(webhookDecider)
      .given([created])
      .when({ ...update, url: created.data.url, active: true })
      .then([]));
  it('re-enables a disabled webhook', () =>
    spec(webhookDecider)
      .given([created, disabled])
      .when({ ...update, active: true })
      .then([updated(['email.*'])]));
  itHidesFromOtherCallers(webhookDecider, [created], { ...update, active: false });
  it('does not update a deleted webhook', () =>
    spec(webhookDecider)
      .given([created, deleted])
      .when({ ...update, active: false })
      .thenFails('not_found'));
});

describe('webhook decider: secret rotation', () => {
  const hour = 3600_000;
  const plus = (ms: number) => new Date(Date.parse(at) + ms).toISOString();
  const rotate = (sealedSecret: string, hoursLater = 0) => ({
    type: 'RotateWebhookSecret' as const,
    ...caller,
    at: plus(hoursLater * hour),
    sealedSecret,
  });
  type Older = { sealedSecret: string; validUntil: string }[];
  /** A rotation `hoursLater` than `at`: the previous secret stays valid for `overlapHours` (24) from it. */
  const rotated = (
    sealedSecret: string,
    previousSealedSecret: string,
    hoursLater = 0,
    olderSecrets: Older = [],
    overlapHours = 24,
  ): WebhookEvent => ({
    type: 'WebhookSecretRotated',
    data: {
      webhookId: 'wh_1',
      sealedSecret,
      previousSealedSecret,
      previousValidUntil: plus((hoursLater + overlapHours) * hour),
      olderSecrets,
      rotatedAt: plus(hoursLater * hour),
    },
  });
  /** A rotation as recorded before several previous secrets were kept: no `olderSecrets`. */
  const rotatedBefore = (
    sealedSecret: string,
    previousSealedSecret: string,
    hoursLater = 0,
  ): WebhookEvent => {
    const { olderSecrets: _, ...data } = rotated(sealedSecret, previousSealedSecret, hoursLater)
      .data as Extract<WebhookEvent, { type: 'WebhookSecretRotated' }>['data'];
    return { type: 'WebhookSecretRotated', data };
  };
  const until = (hoursLater: number) => plus((hoursLater + 24) * hour);

  it('keeps the previous secret valid for 24 hours', () =>
    spec(webhookDecider)
      .given([created])
      .when(rotate('sealed-2'))
      .then([rotated('sealed-2', 'sealed-1')]));
  it('keeps signing with the secrets of earlier rotations until their own overlap ends, newest first', () =>
    spec(webhookDecider)
      .given([
        created,
        rotated('sealed-2', 'sealed-1'),
        rotated('sealed-3', 'sealed-2', 1, [{ sealedSecret: 'sealed-1', validUntil: until(0) }]),
      ])
      .when(rotate('sealed-4', 2))
      .then([
        rotated('sealed-4', 'sealed-3', 2, [
          { sealedSecret: 'sealed-2', validUntil: until(1) },
          { sealedSecret: 'sealed-1', validUntil: until(0) },
        ]),
      ]));
  it('drops the secrets whose overlap has ended', () =>
    spec(webhookDecider)
      .given([
        created,
        rotated('sealed-2', 'sealed-1'),
        rotated('sealed-3', 'sealed-2', 1, [{ sealedSecret: 'sealed-1', validUntil: until(0) }]),
      ])
      .when(rotate('sealed-4', 24))
      .then([rotated('sealed-4', 'sealed-3', 24, [{ sealedSecret: 'sealed-2', validUntil: until(1) }])]));
  it(`signs with at most ${MAX_SIGNING_SECRETS} secrets: past that, the oldest overlap ends at the rotation`, () => {
    const history: WebhookEvent[] = [created];
    let older: Older = [];
    for (let n = 2; n <= MAX_SIGNING_SECRETS; n++) {
      history.push(rotated(`sealed-${n}`, `sealed-${n - 1}`, n, older));
      older = [{ sealedSecret: `sealed-${n - 1}`, validUntil: until(n) }, ...older];
    }
    const n = MAX_SIGNING_SECRETS + 1;
    spec(webhookDecider)
      .given(history)
      .when(rotate(`sealed-${n}`, n))
      .then([rotated(`sealed-${n}`, `sealed-${n - 1}`, n, older.slice(0, MAX_SIGNING_SECRETS - 2))]);
  });
  it('ends the overlap at once when told 0 (a secret that leaked): the replaced secrets sign no more', () =>
    spec(webhookDecider)
      .given([created, rotated('sealed-2', 'sealed-1')])
      .when({ ...rotate('sealed-3', 1), overlapMs: 0 })
      .then([rotated('sealed-3', 'sealed-2', 1, [], 0)]));
  it('ends the earlier secrets no later than the replaced one when told a shorter overlap', () =>
    spec(webhookDecider)
      .given([created, rotated('sealed-2', 'sealed-1')])
      .when({ ...rotate('sealed-3', 1), overlapMs: 2 * hour })
      .then([
        rotated('sealed-3', 'sealed-2', 1, [{ sealedSecret: 'sealed-1', validUntil: plus(3 * hour) }], 2),
      ]));
  it('reads rotations recorded before several previous secrets were kept', () =>
    spec(webhookDecider)
      .given([created, rotatedBefore('sealed-2', 'sealed-1'), rotatedBefore('sealed-3', 'sealed-2', 1)])
      .when(rotate('sealed-4', 2))
      .then([rotated('sealed-4', 'sealed-3', 2, [{ sealedSecret: 'sealed-2', validUntil: until(1) }])]));
  itHidesFromOtherCallers(webhookDecider, [created], rotate('sealed-2'));
});

describe('webhook decider: delete, retry, replay', () => {
  it('deletes', () =>
    spec(webhookDecider)
      .given([created])
      .when({ type: 'DeleteWebhook', ...caller, at: later })
      .then([deleted]));
  it('does not delete twice', () =>
    spec(webhookDecider)
      .given([created, deleted])
      .when({ type: 'DeleteWebhook', ...caller })
      .thenFails('not_found'));
  it('requests a retry of a delivery', () =>
    spec(webhookDecider)
      .given([created])
      .when({ type: 'RequestDeliveryRetry', ...caller, deliveryId: 'whl_1' })
      .then([
        {
          type: 'WebhookDeliveryRetryRequested',
          data: { webhookId: 'wh_1', deliveryId: 'whl_1', requestedAt: at },
        },
      ]));
  it('refuses a retry on a disabled webhook', () =>
    spec(webhookDecider)
      .given([created, disabled])
      .when({ type: 'RequestDeliveryRetry', ...caller, deliveryId: 'whl_1' })
      .thenFails('webhook_inactive'));
  const replay = {
    type: 'RequestWebhookReplay' as const,
    ...caller,
    at: later,
    replayId: 'whr_1',
    since: at,
    until: null,
  };
  it('requests a replay', () =>
    spec(webhookDecider)
      .given([created])
      .when(replay)
      .then([
        {
          type: 'WebhookReplayRequested',
          data: { webhookId: 'wh_1', replayId: 'whr_1', since: at, until: null, requestedAt: later },
        },
      ]));
  it('refuses a replay from the future', () =>
    spec(webhookDecider)
      .given([created])
      .when({ ...replay, since: '2026-02-01T00:00:00Z' })
      .thenFails('validation_error', /since/));
  it('refuses an until before since', () =>
    spec(webhookDecider)
      .given([created])
      .when({ ...replay, until: '2025-12-01T00:00:00Z' })
      .thenFails('validation_error', /until/));
});

describe('webhook decider: dispatcher verdicts', () => {
  const disable = {
    type: 'DisableWebhook' as const,
    webhookId: 'wh_1',
    reason: 'endpoint_gone' as const,
    detail: '410',
    at: later,
  };
  it('disables an active webhook', () =>
    spec(webhookDecider).given([created]).when(disable).then([disabled]));
  it('records nothing for one already off', () =>
    spec(webhookDecider).given([created, disabled]).when(disable).then([]));
  it('records nothing for a deleted one', () =>
    spec(webhookDecider).given([created, deleted]).when(disable).then([]));
  it('records an exhausted delivery', () =>
    spec(webhookDecider)
      .given([created])
      .when({
        type: 'RecordDeliveryExhausted',
        webhookId: 'wh_1',
        deliveryId: 'whl_1',
        eventType: 'email.sent',
        attempts: 8,
        at: later,
      })
      .then([
        {
          type: 'WebhookDeliveryExhausted',
          data: {
            webhookId: 'wh_1',
            deliveryId: 'whl_1',
            eventType: 'email.sent',
            attempts: 8,
            exhaustedAt: later,
          },
        },
      ]));
});
