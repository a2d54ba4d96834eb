/**
 * Traffic shaping's vocabulary: a group of destinations (by where their MX points) and its limits and reply rules
 * (docs/deliverability.md, "Traffic shaping").
 */

/**
 * What one group may receive: connections at once (per MX host), messages per connection, and two rates (null:
 * no limit on that rate).
 */
export interface ShapingLimits {
  connections: number;
  messagesPerConnection: number;
  perMinute: number | null;
  perHour: number | null;
}

/** A group with neither rate limited: nothing to count, only its holds (pauses, back-offs) apply. */
export const unmetered = (l: ShapingLimits): boolean => l.perMinute === null && l.perHour === null;

/**
 * A reply rule: a reply-text regular expression (`match`, case-insensitive) and/or an enhanced status code
 * pattern (`status`: `4.7.28`, `4.7.*`); with both it matches only when both do. `pause` holds the whole group for
 * `forMs`; `halve` halves its rates.
 */
export type ReplyRule = { match?: string; status?: string } & (
  | { action: 'pause'; forMs: number }
  | { action: 'halve' }
);

/** The limits and reply rules every destination that no group names gets (each one a group of its own). */
export interface ShapingDefaults extends ShapingLimits {
  replies: ReplyRule[];
}

/** A named group: its MX host-name patterns (`*.google.com`, `aspmx.l.google.com`), limits and reply rules. */
export interface ShapingGroupRule extends ShapingDefaults {
  name: string;
  mx: string[];
}

/** The shaping file as it applies: the shipped groups with the operator's file over them. */
export interface ShapingPolicy {
  groups: ShapingGroupRule[];
  default: ShapingDefaults;
}

/** The group a destination belongs to, as the limiter uses it. */
export interface ShapingGroup {
  /** The group's name, or `mx:<first MX host>` for a destination no group names, or `smarthost`. */
  name: string;
  limits: ShapingLimits;
  replies: readonly ReplyRule[];
}

/** The group every message belongs to when a smarthost relays them all. */
export const SMARTHOST_GROUP = 'smarthost';

/** The prefix of a destination's own group, named after its first MX host. */
export const MX_GROUP_PREFIX = 'mx:';
