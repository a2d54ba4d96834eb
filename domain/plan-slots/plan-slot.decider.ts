import { AppError } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { PlanSlotEvent, PlanSlotFreedReason, PlanSlotResource } from './plan-slot.events.ts';

export type PlanSlotCommand =
  | {
      type: 'TakeSlot';
      resource: PlanSlotResource;
      id: string;
      /** null: the plan does not limit this resource. */
      limit: number | null;
      /** The refusal's message (each resource words its own). */
      refusal: string;
      /** Ids of the resources that exist now (read model); used only by the first write, to seed the stream. */
      existing: string[];
      /** Held slots whose resource was found deleted, or never created: freed before counting. */
      stale: { id: string; reason: PlanSlotFreedReason }[];
      at: string;
    }
  | { type: 'FreeSlot'; resource: PlanSlotResource; id: string; reason: PlanSlotFreedReason; at: string };

export interface PlanSlotState {
  /** False until the first write: the stream does not know the resources created before it. */
  seeded: boolean;
  /** Resource id -> when its slot was taken (seeded ones: when seeded). */
  slots: Record<string, string>;
}

export const heldSlots = (state: PlanSlotState) => Object.keys(state.slots).length;

/**
 * A slot per resource that counts against the plan. Taking one refuses with `plan_limit_exceeded` when the
 * slots held (after freeing the stale ones) reach the limit. An unlimited plan records its slot only once the
 * stream is seeded (after a plan change, say), so that a later, limited plan still counts right; an unseeded
 * stream is seeded by the first limited take, from the read model.
 */
export const planSlotDecider: Decider<PlanSlotCommand, PlanSlotEvent, PlanSlotState> = {
  initialState: { seeded: false, slots: {} },
  evolve(state, event) {
    switch (event.type) {
      case 'PlanSlotsSeeded':
        return {
          seeded: true,
          slots: { ...Object.fromEntries(event.data.ids.map((id) => [id, event.data.at])), ...state.slots },
        };
      case 'PlanSlotTaken':
        return { ...state, slots: { ...state.slots, [event.data.id]: event.data.at } };
      case 'PlanSlotFreed': {
        const { [event.data.id]: _, ...slots } = state.slots;
        return { ...state, slots };
      }
      default:
        return state;
    }
  },
  decide(command, state) {
    const { resource, id, at } = command;
    switch (command.type) {
      case 'TakeSlot': {
        if (state.slots[id]) return [];
        const taken: PlanSlotEvent = { type: 'PlanSlotTaken', data: { resource, id, at } };
        if (command.limit === null) return state.seeded ? [taken] : [];
        const seed: PlanSlotEvent[] = state.seeded
          ? []
          : [{ type: 'PlanSlotsSeeded', data: { resource, ids: command.existing, at } }];
        const seeded = seed.reduce(planSlotDecider.evolve, state);
        const freed: PlanSlotEvent[] = command.stale
          .filter((s) => seeded.slots[s.id])
          .map((s) => ({ type: 'PlanSlotFreed', data: { resource, id: s.id, reason: s.reason, at } }));
        if (heldSlots(freed.reduce(planSlotDecider.evolve, seeded)) >= command.limit)
          throw new AppError('plan_limit_exceeded', command.refusal);
        return [...seed, ...freed, taken];
      }
      case 'FreeSlot':
        if (!state.slots[id]) return [];
        return [{ type: 'PlanSlotFreed', data: { resource, id, reason: command.reason, at } }];
    }
  },
};
