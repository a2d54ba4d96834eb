import { enhancedStatusOf } from '../emails/bounce-classes.ts';
import {
  MX_GROUP_PREFIX,
  type ReplyRule,
  type ShapingGroup,
  type ShapingPolicy,
  SMARTHOST_GROUP,
} from './shaping-groups.ts';

const hostName = (name: string) => name.toLowerCase().replace(/\.$/, '');

/** `*.google.com` matches any host under google.com (not google.com itself); anything else matches itself. */
export function hostMatches(pattern: string, host: string): boolean {
  const p = hostName(pattern);
  const h = hostName(host);
  return p.startsWith('*.') ? h.endsWith(p.slice(1)) : h === p;
}

/**
 * The group of a destination: through a smarthost every destination is `smarthost`; otherwise the first group
 * (in the policy's order) a pattern of which matches one of the MX hosts, tried in the order given (by
 * preference). A destination no group names is a group of its own, `mx:<first MX host>` (`mx:<domain>` for the
 * implicit MX of a domain without MX records), with the default limits.
 */
export function groupOf(
  policy: ShapingPolicy,
  domain: string,
  mxHosts: readonly string[],
  options: { smarthost?: boolean } = {},
): ShapingGroup {
  const { replies, ...limits } = policy.default;
  if (options.smarthost) {
    const own = policy.groups.find((g) => g.name === SMARTHOST_GROUP);
    return own ? groupFrom(own) : { name: SMARTHOST_GROUP, limits, replies };
  }
  for (const host of mxHosts) {
    const found = policy.groups.find((g) => g.mx.some((pattern) => hostMatches(pattern, host)));
    if (found) return groupFrom(found);
  }
  return { name: `${MX_GROUP_PREFIX}${hostName(mxHosts[0] ?? domain)}`, limits, replies };
}

function groupFrom(g: ShapingPolicy['groups'][number]): ShapingGroup {
  const { connections, messagesPerConnection, perMinute, perHour } = g;
  return {
    name: g.name,
    limits: { connections, messagesPerConnection, perMinute, perHour },
    replies: g.replies,
  };
}

/** What a destination's reply, as `TrafficShaping.observe` gets it, says about its group. */
export interface ShapingReply {
  smtpCode?: number;
  smtpResponse: string;
  /** The reply's class (domain/emails/bounce-classes.ts), deferrals included. */
  classification: string;
  result: 'delivered' | 'deferred' | 'bounced';
}

export type ReplyAction =
  | { kind: 'pause'; forMs: number; rule: ReplyRule }
  | { kind: 'halve'; rule?: ReplyRule }
  | { kind: 'backoff' }
  | { kind: 'none' };

function statusMatches(pattern: string, status: string | undefined): boolean {
  if (!status) return false;
  const have = status.split('.');
  return pattern.split('.').every((p, i) => p === '*' || p === have[i]);
}

const ruleMatches = (rule: ReplyRule, reply: ShapingReply, status: string | undefined) =>
  (rule.status === undefined || statusMatches(rule.status, status)) &&
  (rule.match === undefined || new RegExp(rule.match, 'i').test(reply.smtpResponse));

/**
 * What a refusal does to its group: the first of the group's reply rules that matches decides (pause or halve);
 * otherwise a `rate_limited` reply backs the whole group off; anything else, and every delivery, changes nothing
 * here (a delivery ends a back-off: `TrafficShaping.observe`).
 */
export function replyAction(reply: ShapingReply, group: Pick<ShapingGroup, 'replies'>): ReplyAction {
  if (reply.result === 'delivered') return { kind: 'none' };
  const status = enhancedStatusOf(reply.smtpResponse);
  const rule = group.replies.find((r) => ruleMatches(r, reply, status));
  if (rule?.action === 'pause') return { kind: 'pause', forMs: rule.forMs, rule };
  if (rule?.action === 'halve') return { kind: 'halve', rule };
  if (reply.classification === 'rate_limited') return { kind: 'backoff' };
  // A block says the sender's reputation or authentication is in doubt there: sending slower, never faster.
  return SLOWING.has(reply.classification) ? { kind: 'halve' } : { kind: 'none' };
}

/** Classes that halve their group's rates when no reply rule names the reply. */
const SLOWING: ReadonlySet<string> = new Set(['spam_or_reputation_block', 'authentication_failure']);

/** The back-off curve: 1 min at level 1, doubling with each level, at most 1 h. */
export const BACKOFF_BASE_MS = 60_000;
export const BACKOFF_CAP_MS = 3_600_000;
export const backoffMs = (level: number): number =>
  level <= 0 ? 0 : Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (level - 1));

/** A halved group's rates never fall below a sixteenth of its limits. */
export const MIN_RATE_FACTOR = 1 / 16;
/** A halved group's factor doubles back with each hour without a further halving, up to 1. */
export const RATE_RECOVERY_MS = 3_600_000;

/** The factor a group's rates run at now: its stored factor, doubled for each quiet hour since it was halved. */
export function effectiveFactor(stored: number, halvedAt: Date | null, now: Date): number {
  if (!halvedAt) return Math.min(1, stored);
  const quietHours = Math.max(0, Math.floor((now.getTime() - halvedAt.getTime()) / RATE_RECOVERY_MS));
  return Math.min(1, stored * 2 ** quietHours);
}

/**
 * The burst GCRA lets through at once (docs/deliverability.md): a tenth of the per-minute rate (6 s of it) and a
 * sixtieth of the per-hour rate (1 min of it), each at least 1 message, and at least the messages asked for.
 */
export const MINUTE_BURST_SHARE = 10;
export const HOUR_BURST_SHARE = 60;
