import { type EgressPolicy, poolsWith } from '../../../domain/delivery/egress-sources.ts';
import { utcDay, warmupCap, warmupDay } from '../../../domain/delivery/egress-warmup.ts';
import type { Queryable } from '../../../platform/db/database.ts';

/** One destination group of a source in warm-up: today's cap (null: none) and what it sent there today. */
export interface SourceGroupUse {
  group: string;
  cap: number | null;
  used: number;
}

/** A source as `postline sources` shows it. */
export interface SourceView {
  source: string;
  pools: string[];
  /** null: not bound (the machine's source). */
  address: string | null;
  /** null: the machine's host name. */
  helo: string | null;
  weight: number;
  warmup: { started: string; day: number } | null;
  /** The schedule's named groups, `default` (the cap of each group it does not name), and today's others. */
  groups: SourceGroupUse[];
}

/** Every source of the policy with its warm-up day, and per destination group today's cap and use. */
export async function sourcesView(db: Queryable, policy: EgressPolicy, now: Date): Promise<SourceView[]> {
  const { rows } = await db.query<{ source: string; grp: string; used: number }>(
    'SELECT source, grp, used FROM egress_warmup WHERE day = $1 ORDER BY grp',
    [utcDay(now)],
  );
  return policy.sources.map((s) => {
    const started = s.warmupStarted;
    const used = new Map(rows.filter((r) => r.source === s.name).map((r) => [r.grp, r.used]));
    const groups = started
      ? [...new Set([...Object.keys(policy.warmup), ...used.keys()])].map((group) => ({
          group,
          cap: warmupCap(policy.warmup, group, started, now),
          used: used.get(group) ?? 0,
        }))
      : [];
    return {
      source: s.name,
      pools: poolsWith(policy, s.name),
      address: s.address ?? null,
      helo: s.helo ?? null,
      weight: s.weight,
      warmup: started ? { started, day: warmupDay(started, now) } : null,
      groups,
    };
  });
}
