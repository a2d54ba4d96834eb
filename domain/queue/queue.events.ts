/**
 * An operator's controls of one destination's queue (the recipient domain mail waits for). `orgId` null: every
 * organization's mail to it. `at` is when the operator asked (the command's time).
 */
export type QueueEvent =
  | {
      type: 'DeliveryPaused';
      data: { destination: string; orgId: string | null; until: string; reason: string | null; at: string };
    }
  | { type: 'DeliveryResumed'; data: { destination: string; orgId: string | null; at: string } }
  | { type: 'DeliveryRetryRequested'; data: { destination: string; orgId: string | null; at: string } }
  | { type: 'DeliveryGiveUpRequested'; data: { destination: string; orgId: string | null; at: string } };

export const QUEUE_EVENT_TYPES = [
  'DeliveryPaused',
  'DeliveryResumed',
  'DeliveryRetryRequested',
  'DeliveryGiveUpRequested',
] as const satisfies readonly QueueEvent['type'][];

/** The scope of a control in stream names and `delivery_pauses.org_id`: an organization, or '' for every one. */
export const scopeOf = (orgId: string | null) => orgId ?? '';

/**
 * One stream per (scope, destination): a pause and its resumption are decided on the same history. Organization
 * ids start with `org_`, so `all` names no organization. The destination is normalized (ASCII, lower case) first.
 */
export const queueStream = (orgId: string | null, destination: string) =>
  `queue-${orgId ?? 'all'}-${destination}`;
