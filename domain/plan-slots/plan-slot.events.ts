import type { Mode } from '../../platform/eventstore/types.ts';

/** A resource a plan limits by count; also its read model's table (`id`, `org_id`, `mode`, `deleted_at`). */
export type PlanSlotResource = 'domains' | 'templates' | 'webhooks';

/**
 * One stream per resource, organization and mode holds who uses the plan's slots. Appended with an expected
 * revision, so two creates racing for the last slot cannot both get it.
 */
export const planSlotStream = (resource: PlanSlotResource, orgId: string, mode: Mode) =>
  `planslots-${resource}-${orgId}-${mode}`;

/**
 * Why a slot was given back. `deleted`: the resource was deleted; `not_created`: its create was refused after the
 * slot was taken; `abandoned`: its stream was still empty minutes later (a crash between slot and create).
 */
export type PlanSlotFreedReason = 'deleted' | 'not_created' | 'abandoned';

export type PlanSlotEvent =
  /** First write to the stream: the resources that existed before (read model, not deleted). */
  | { type: 'PlanSlotsSeeded'; data: { resource: PlanSlotResource; ids: string[]; at: string } }
  | { type: 'PlanSlotTaken'; data: { resource: PlanSlotResource; id: string; at: string } }
  | {
      type: 'PlanSlotFreed';
      data: { resource: PlanSlotResource; id: string; reason: PlanSlotFreedReason; at: string };
    };
