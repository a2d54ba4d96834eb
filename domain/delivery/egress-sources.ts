/**
 * Egress sources and pools (docs/deliverability.md, "Egress IP pools and warm-up"): the local addresses delivery
 * binds its connections to, each with the name it says in EHLO, grouped into pools that organizations' lanes are
 * assigned to. What the operator declares is in SOURCES_FILE; without it there is one source, the machine's.
 */

/** Mail of broadcasts may leave from a pool of its own, apart from transactional mail. */
export type EgressLane = 'transactional' | 'broadcast';

export interface EgressSource {
  name: string;
  /** The local address connections are bound to; absent: the machine's choice (no bind). */
  address?: string;
  /** The name said in EHLO, which should be the address's reverse DNS; absent: the machine's host name. */
  helo?: string;
  /** Its share of its pools' mail, against the other sources' weights. */
  weight: number;
  /** The first day (UTC, `YYYY-MM-DD`) of its warm-up: day 1. Absent: no warm-up, no daily caps. */
  warmupStarted?: string;
}

export interface EgressPool {
  name: string;
  /** Its sources' names, each declared in `sources`. */
  sources: string[];
}

/** Daily caps per destination group: day 1 first; after the last day, no cap. `default`: groups not named. */
export type WarmupSchedule = Record<string, readonly number[]>;

export interface EgressPolicy {
  sources: EgressSource[];
  pools: EgressPool[];
  /** The pool of transactional mail of organizations the file does not name. */
  defaultPool: string;
  /** The pool of broadcast mail of organizations the file does not name (the default pool unless given). */
  broadcastPool: string;
  /** Per organization id, the pool of each lane it names (a lane left out takes the lane's default). */
  organizations: Record<string, Partial<Record<EgressLane, string>>>;
  warmup: WarmupSchedule;
  /** False: no SOURCES_FILE, the machine's one source, nothing to count or record (today's behaviour). */
  declared: boolean;
}

/** The name of the machine's source and pool when no SOURCES_FILE declares any. */
export const MACHINE_SOURCE = 'machine';

/** The pool an organization's mail of a lane leaves from. */
export function poolOf(policy: EgressPolicy, orgId: string, lane: EgressLane): EgressPool {
  const assigned = policy.organizations[orgId]?.[lane];
  const name = assigned ?? (lane === 'broadcast' ? policy.broadcastPool : policy.defaultPool);
  const pool = policy.pools.find((p) => p.name === name);
  // The file is checked at start-up: every name it assigns is a pool.
  if (!pool) throw new Error(`no egress pool ${name}`);
  return pool;
}

/** The addresses the installation sends from: those listed (POSTLINE_OUTBOUND_IPS) and every declared source's, once. */
export const outboundAddresses = (listed: readonly string[], policy: EgressPolicy): string[] => [
  ...new Set([...listed, ...policy.sources.flatMap((s) => (s.address ? [s.address] : []))]),
];

/** The pools a source belongs to, by name. */
export const poolsWith = (policy: EgressPolicy, source: string): string[] =>
  policy.pools.filter((p) => p.sources.includes(source)).map((p) => p.name);
