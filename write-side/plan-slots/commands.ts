import { rebuildState } from '../../platform/eventstore/command.ts';
import {
  type EventMetadata,
  type ExpectedRevision,
  WrongExpectedRevisionError,
} from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { heldSlots, type PlanSlotCommand, planSlotDecider } from './decider.ts';
import { type PlanSlotFreedReason, type PlanSlotResource, planSlotStream } from './events.ts';

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
}

/** A slot whose resource stream is still empty after this long was left by a crash, not a request in flight. */
export const SLOT_ABANDONED_AFTER_MS = 5 * 60_000;

/** Every writer reads, decides and appends once per round; a round lets at least one of them through. */
const MAX_ATTEMPTS = 10;

type Deps = Pick<Services, 'store' | 'clock' | 'db'>;

/**
 * The resources that exist now, by the read model (the same rule as its count: not deleted). Only read for the
 * first write to a slot stream; a resource deleted but not yet projected is freed later as stale.
 */
async function existingIds(services: Deps, resource: PlanSlotResource, meta: EventMetadata) {
  const rows = await services.db.kysely
    .selectFrom(resource)
    .select('id')
    .where('org_id', '=', meta.orgId)
    .where('mode', '=', meta.mode)
    .where('deleted_at', 'is', null)
    .execute();
  return rows.map((r: { id: string }) => r.id);
}

/** Held slots that no longer count: the resource was deleted, or its stream is still empty long after. */
async function staleSlots(services: Deps, kind: PlanSlotKind, held: [string, string][], at: string) {
  const stale: { id: string; reason: PlanSlotFreedReason }[] = [];
  for (const [id, since] of held) {
    const events = await services.store.readStream(kind.streamOf(id));
    if (events.length === 0 && Date.parse(at) - Date.parse(since) > SLOT_ABANDONED_AFTER_MS)
      stale.push({ id, reason: 'abandoned' });
    else if (events.some((e) => kind.releasedBy.includes(e.type))) stale.push({ id, reason: 'deleted' });
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
  const stream = planSlotStream(kind.resource, meta.orgId, meta.mode);
  const cap = limit === null || limit === Number.POSITIVE_INFINITY ? null : limit;
  for (let attempt = 1; ; attempt++) {
    const at = services.clock.now().toISOString();
    const history = await services.store.readStream(stream);
    const state = rebuildState(planSlotDecider, history);
    const existing = state.seeded || cap === null ? [] : await existingIds(services, kind.resource, meta);
    const held: [string, string][] = state.seeded
      ? Object.entries(state.slots)
      : existing.map((x) => [x, at]);
    const stale = cap !== null && held.length >= cap ? await staleSlots(services, kind, held, at) : [];
    const command: PlanSlotCommand = {
      type: 'TakeSlot',
      resource: kind.resource,
      id,
      limit: cap,
      refusal,
      existing,
      stale,
      at,
    };
    const events = planSlotDecider.decide(command, state);
    const next = events.reduce(planSlotDecider.evolve, state);
    const others = Math.max(0, heldSlots(next) - (next.slots[id] ? 1 : 0));
    if (events.length === 0) return { held: others };
    const revision = history.length ? history[history.length - 1].revision : -1;
    const expectedRevision: ExpectedRevision = revision < 0 ? 'no_stream' : revision;
    try {
      await services.store.append(
        stream,
        events.map((e) => ({ type: e.type, data: e.data, metadata: meta })),
        { expectedRevision },
      );
      return { held: others };
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError) || attempt >= MAX_ATTEMPTS) throw error;
    }
  }
}

/**
 * Gives the slot of `id` back (no-op when it holds none). Appends without an expected revision: freeing only
 * lowers the count, two frees of one slot are harmless, and parallel deletes must not fail on each other.
 */
export async function freeSlot(
  services: Pick<Services, 'store' | 'clock'>,
  meta: EventMetadata,
  kind: PlanSlotKind,
  id: string,
  reason: PlanSlotFreedReason = 'deleted',
) {
  const stream = planSlotStream(kind.resource, meta.orgId, meta.mode);
  const state = rebuildState(planSlotDecider, await services.store.readStream(stream));
  const at = services.clock.now().toISOString();
  const events = planSlotDecider.decide({ type: 'FreeSlot', resource: kind.resource, id, reason, at }, state);
  if (events.length === 0) return;
  await services.store.append(
    stream,
    events.map((e) => ({ type: e.type, data: e.data, metadata: meta })),
    { expectedRevision: 'any' },
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
