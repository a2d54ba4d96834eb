import {
  heldSlots,
  type PlanSlotCommand,
  type PlanSlotState,
  planSlotDecider,
} from '../../domain/plan-slots/plan-slot.decider.ts';
import {
  type PlanSlotFreedReason,
  type PlanSlotResource,
  planSlotStream,
} from '../../domain/plan-slots/plan-slot.events.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';

/**
 * Race-free plan limits for resources counted per organization and mode (domains, templates, webhooks); see
 * docs/domains.md, "Plan limit". The slot is taken before the resource is written and given back when it is
 * deleted. Stale slots are freed when the limit is reached, so a crash on either side heals itself.
 */
export interface PlanSlotKind {
  resource: PlanSlotResource;
  /** The resource's own stream: empty means it was never created. */
  streamOf: (id: string) => string;
  /** Event types after which the resource no longer counts against the plan. */
  releasedBy: string[];
  /** Event types after which it counts again (a restore): the later of the two kinds decides. */
  restoredBy?: string[];
}

/** Whether the resource's history ends released: a release not followed by a restore. */
const released = (kind: PlanSlotKind, events: { type: string }[]) => {
  const last = events.findLast((e) => kind.releasedBy.includes(e.type) || kind.restoredBy?.includes(e.type));
  return last !== undefined && kind.releasedBy.includes(last.type);
};

/** A slot whose resource stream is still empty after this long was left by a crash, not a request in flight. */
export const SLOT_ABANDONED_AFTER_MS = 5 * 60_000;

/** Every writer reads, decides and appends once per round; a round lets at least one of them through. */
const MAX_ATTEMPTS = 10;

type Deps = Pick<Services, 'store' | 'clock' | 'db' | 'lookUps'>;

/**
 * The resources that exist now, by the read model (the same rule as its count: not deleted). Only read for the
 * first write to a slot stream; a resource deleted but not yet projected is freed later as stale.
 */
const existingIds = (services: Deps, resource: PlanSlotResource, meta: EventMetadata) =>
  services.lookUps.countedResourceIds(services.db, meta, resource);

/** Held slots that no longer count: the resource was deleted, or its stream is still empty long after. */
async function staleSlots(services: Deps, kind: PlanSlotKind, held: [string, string][], at: string) {
  const stale: { id: string; reason: PlanSlotFreedReason }[] = [];
  for (const [id, since] of held) {
    const events = await services.store.readStream(kind.streamOf(id));
    if (events.length === 0 && Date.parse(at) - Date.parse(since) > SLOT_ABANDONED_AFTER_MS)
      stale.push({ id, reason: 'abandoned' });
    else if (released(kind, events)) stale.push({ id, reason: 'deleted' });
  }
  return stale;
}

/**
 * Takes a slot for the resource `id` (which the caller then creates), or throws 422 `plan_limit_exceeded` with
 * `refusal`. Appends with the revision it read; on a conflict it reads and decides again, so of two requests
 * racing for the last slot the second is refused. Returns how many other slots are held.
 */
export async function takeSlot(
  services: Deps,
  meta: EventMetadata,
  kind: PlanSlotKind,
  id: string,
  limit: number | null,
  refusal: string,
): Promise<{ held: number }> {
  const takeSlot = async (state: PlanSlotState): Promise<PlanSlotCommand> => {
    const at = services.clock.now().toISOString();
    const existing = state.seeded || limit === null ? [] : await existingIds(services, kind.resource, meta);
    const held: [string, string][] = state.seeded
      ? Object.entries(state.slots)
      : existing.map((x) => [x, at]);
    const stale = limit !== null && held.length >= limit ? await staleSlots(services, kind, held, at) : [];
    return { type: 'TakeSlot', resource: kind.resource, id, limit, refusal, existing, stale, at };
  };
  const { state } = await handleCommand(
    services.store,
    planSlotStream(kind.resource, meta.orgId, meta.mode),
    planSlotDecider,
    takeSlot,
    meta,
    { retries: MAX_ATTEMPTS - 1 },
  );
  return { held: Math.max(0, heldSlots(state) - (state.slots[id] ? 1 : 0)) };
}

/**
 * Gives the slot of `id` back (no-op when it holds none). Parallel deletes conflict only on the revision: each
 * decides again on what the others freed.
 */
export async function freeSlot(
  services: Pick<Services, 'store' | 'clock'>,
  meta: EventMetadata,
  kind: PlanSlotKind,
  id: string,
  reason: PlanSlotFreedReason = 'deleted',
) {
  const at = services.clock.now().toISOString();
  await handleCommand(
    services.store,
    planSlotStream(kind.resource, meta.orgId, meta.mode),
    planSlotDecider,
    { type: 'FreeSlot', resource: kind.resource, id, reason, at },
    meta,
    { retries: MAX_ATTEMPTS - 1 },
  );
}

/**
 * Takes the slot, then runs `create` (given the number of other slots held). When `create` fails and the
 * resource was not written, the slot is given back at once; a crash instead leaves it to the abandoned rule.
 */
export async function withPlanSlot<T>(
  services: Deps,
  meta: EventMetadata,
  kind: PlanSlotKind,
  slot: { id: string; limit: number | null; refusal: string },
  create: (held: number) => Promise<T>,
): Promise<T> {
  const { held } = await takeSlot(services, meta, kind, slot.id, slot.limit, slot.refusal);
  try {
    return await create(held);
  } catch (error) {
    const written = await services.store.readStream(kind.streamOf(slot.id)).then(
      (events) => events.length > 0,
      () => true,
    );
    if (!written) await freeSlot(services, meta, kind, slot.id, 'not_created').catch(() => {});
    throw error;
  }
}
