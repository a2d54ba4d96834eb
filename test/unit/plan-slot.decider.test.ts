import { describe, it } from 'vitest';
import { type PlanSlotCommand, planSlotDecider } from '../../write-side/plan-slots/plan-slot.decider.ts';
import type { PlanSlotEvent } from '../../write-side/plan-slots/plan-slot.events.ts';
import { spec } from '../support/given-when-then.ts';

const at = '2026-01-05T00:00:00.000Z';
const seeded = (...ids: string[]): PlanSlotEvent => ({
  type: 'PlanSlotsSeeded',
  data: { resource: 'webhooks', ids, at },
});
const taken = (id: string): PlanSlotEvent => ({
  type: 'PlanSlotTaken',
  data: { resource: 'webhooks', id, at },
});
const freed = (id: string, reason: 'deleted' | 'abandoned' | 'not_created' = 'deleted'): PlanSlotEvent => ({
  type: 'PlanSlotFreed',
  data: { resource: 'webhooks', id, reason, at },
});
type TakeSlot = Extract<PlanSlotCommand, { type: 'TakeSlot' }>;
const take = (
  id: string,
  limit: number | null,
  more: Partial<Pick<TakeSlot, 'existing' | 'stale'>> = {},
): PlanSlotCommand => ({
  type: 'TakeSlot',
  resource: 'webhooks',
  id,
  limit,
  refusal: `Your plan allows ${limit} webhook endpoints; delete one or upgrade.`,
  existing: [],
  stale: [],
  at,
  ...more,
});
const free = (id: string): PlanSlotCommand => ({
  type: 'FreeSlot',
  resource: 'webhooks',
  id,
  reason: 'deleted',
  at,
});

describe('plan slot decider', () => {
  it('seeds the stream on the first take, from the resources that exist', () =>
    spec(planSlotDecider)
      .given([])
      .when(take('wh_b', 2, { existing: ['wh_a'] }))
      .then([seeded('wh_a'), taken('wh_b')]));

  it('refuses the first take when the existing resources fill the plan', () =>
    spec(planSlotDecider)
      .given([])
      .when(take('wh_b', 1, { existing: ['wh_a'] }))
      .thenFails('plan_limit_exceeded', /allows 1 webhook endpoints/));

  it('ignores `existing` once seeded', () =>
    spec(planSlotDecider)
      .given([seeded()])
      .when(take('wh_b', 1, { existing: ['wh_a'] }))
      .then([taken('wh_b')]));

  it('takes the last slot', () =>
    spec(planSlotDecider)
      .given([seeded('wh_a'), taken('wh_b')])
      .when(take('wh_c', 3))
      .then([taken('wh_c')]));

  it('refuses at the limit (the second of two racing takes, decided again on the fresh stream)', () =>
    spec(planSlotDecider)
      .given([seeded(), taken('wh_a')])
      .when(take('wh_b', 1))
      .thenFails('plan_limit_exceeded'));

  it('counts a freed slot as free', () =>
    spec(planSlotDecider)
      .given([seeded('wh_a'), freed('wh_a')])
      .when(take('wh_b', 1))
      .then([taken('wh_b')]));

  it('frees stale slots (abandoned or deleted) before counting', () =>
    spec(planSlotDecider)
      .given([seeded(), taken('wh_a')])
      .when(take('wh_b', 1, { stale: [{ id: 'wh_a', reason: 'abandoned' }] }))
      .then([freed('wh_a', 'abandoned'), taken('wh_b')]));

  it('ignores stale ids that hold no slot', () =>
    spec(planSlotDecider)
      .given([seeded(), taken('wh_a')])
      .when(take('wh_b', 1, { stale: [{ id: 'wh_x', reason: 'deleted' }] }))
      .thenFails('plan_limit_exceeded'));

  it('is idempotent for an id that holds a slot already', () =>
    spec(planSlotDecider)
      .given([seeded(), taken('wh_a')])
      .when(take('wh_a', 1))
      .then([]));

  it('does not start the stream for an unlimited plan', () =>
    spec(planSlotDecider)
      .given([])
      .when(take('wh_a', null, { existing: ['wh_x'] }))
      .then([]));

  it('keeps counting on an unlimited plan once seeded (a later limited plan counts right)', () =>
    spec(planSlotDecider)
      .given([seeded('wh_a'), taken('wh_b')])
      .when(take('wh_c', null))
      .then([taken('wh_c')]));

  it('frees a held slot', () =>
    spec(planSlotDecider)
      .given([seeded('wh_a')])
      .when(free('wh_a'))
      .then([freed('wh_a')]));

  it('frees nothing for an id without a slot, twice or on an unseeded stream', () => {
    spec(planSlotDecider)
      .given([seeded('wh_a'), freed('wh_a')])
      .when(free('wh_a'))
      .then([]);
    spec(planSlotDecider).given([]).when(free('wh_a')).then([]);
  });
});
