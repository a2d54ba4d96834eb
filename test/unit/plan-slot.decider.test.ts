import { describe, it } from 'vitest';
import { type PlanSlotCommand, planSlotDecider } from '../../domain/plan-slots/plan-slot.decider.ts';
import type { PlanSlotEvent } from '../../domain/plan-slots/plan-slot.events.ts';
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
  it.each<{ rule: string; history: PlanSlotEvent[]; command: PlanSlotCommand; appends: PlanSlotEvent[] }>([
    {
      rule: 'seeds the stream on the first take, from the resources that exist',
      history: [],
      command: take('wh_b', 2, { existing: ['wh_a'] }),
      appends: [seeded('wh_a'), taken('wh_b')],
    },
    {
      rule: 'ignores `existing` once seeded',
      history: [seeded()],
      command: take('wh_b', 1, { existing: ['wh_a'] }),
      appends: [taken('wh_b')],
    },
    {
      rule: 'takes the last slot',
      history: [seeded('wh_a'), taken('wh_b')],
      command: take('wh_c', 3),
      appends: [taken('wh_c')],
    },
    {
      rule: 'counts a freed slot as free',
      history: [seeded('wh_a'), freed('wh_a')],
      command: take('wh_b', 1),
      appends: [taken('wh_b')],
    },
    {
      rule: 'frees stale slots (abandoned or deleted) before counting',
      history: [seeded(), taken('wh_a')],
      command: take('wh_b', 1, { stale: [{ id: 'wh_a', reason: 'abandoned' }] }),
      appends: [freed('wh_a', 'abandoned'), taken('wh_b')],
    },
    {
      rule: 'is idempotent for an id that holds a slot already',
      history: [seeded(), taken('wh_a')],
      command: take('wh_a', 1),
      appends: [],
    },
    {
      rule: 'does not start the stream for an unlimited plan',
      history: [],
      command: take('wh_a', null, { existing: ['wh_x'] }),
      appends: [],
    },
    {
      rule: 'keeps counting on an unlimited plan once seeded (a later limited plan counts right)',
      history: [seeded('wh_a'), taken('wh_b')],
      command: take('wh_c', null),
      appends: [taken('wh_c')],
    },
    { rule: 'frees a held slot', history: [seeded('wh_a')], command: free('wh_a'), appends: [freed('wh_a')] },
    {
      rule: 'frees nothing for an id without a slot, twice',
      history: [seeded('wh_a'), freed('wh_a')],
      command: free('wh_a'),
      appends: [],
    },
    { rule: 'frees nothing on an unseeded stream', history: [], command: free('wh_a'), appends: [] },
  ])('$rule', ({ history, command, appends }) =>
    spec(planSlotDecider).given(history).when(command).then(appends),
  );

  it.each<{ rule: string; history: PlanSlotEvent[]; command: PlanSlotCommand; message?: RegExp }>([
    {
      rule: 'refuses the first take when the existing resources fill the plan',
      history: [],
      command: take('wh_b', 1, { existing: ['wh_a'] }),
      message: /allows 1 webhook endpoints/,
    },
    {
      rule: 'refuses at the limit (the second of two racing takes, decided again on the fresh stream)',
      history: [seeded(), taken('wh_a')],
      command: take('wh_b', 1),
    },
    {
      rule: 'ignores stale ids that hold no slot',
      history: [seeded(), taken('wh_a')],
      command: take('wh_b', 1, { stale: [{ id: 'wh_x', reason: 'deleted' }] }),
    },
  ])('$rule', ({ history, command, message }) =>
    spec(planSlotDecider).given(history).when(command).thenFails('plan_limit_exceeded', message),
  );
});
