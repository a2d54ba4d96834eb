import { weightedOrder } from '../../../domain/delivery/egress-pick.ts';
import {
  type EgressLane,
  type EgressPolicy,
  type EgressSource,
  poolOf,
} from '../../../domain/delivery/egress-sources.ts';
import { nextDayStart, utcDay, warmupCap } from '../../../domain/delivery/egress-warmup.ts';
import type { ShapingGroup } from '../../../domain/delivery/shaping-groups.ts';
import type { Clock } from '../../../platform/clock.ts';
import type { Database } from '../../../platform/db/database.ts';

/** The source a message leaves from, and the warm-up counter it took (to give back when it is not sent). */
export interface EgressChoice {
  source: EgressSource;
  counted?: { group: string; day: string };
}

export type EgressAdmission = { ok: true; choice: EgressChoice } | { ok: false; until: Date; reason: string };

/** Past days' counters are kept this long (for a look back with SQL), then pruned. */
const KEEP_DAYS = 7;

/**
 * Which source of its pool a message leaves from (docs/deliverability.md, "Egress IP pools and warm-up"): the
 * pool's sources in an order drawn by weight, the first with room under its warm-up cap for the destination
 * group today. A source in warm-up takes the message from its counter in `egress_warmup` (one statement, under
 * the row's lock, so that no number of processes sends past the cap); a source without a cap today costs no
 * statement. When every source is at its cap, the message waits for the next UTC day, unattempted.
 */
export class EgressSources {
  readonly #db: Database;
  readonly #clock: Clock;
  readonly #policy: EgressPolicy;
  readonly #random: () => number;
  readonly #byName: Map<string, EgressSource>;
  #prunedDay = '';

  constructor(o: { db: Database; clock: Clock; policy: EgressPolicy; random?: () => number }) {
    this.#db = o.db;
    this.#clock = o.clock;
    this.#policy = o.policy;
    this.#random = o.random ?? Math.random;
    this.#byName = new Map(o.policy.sources.map((s) => [s.name, s]));
  }

  /** Whether SOURCES_FILE declared sources: without it, delivery binds nothing and records no source. */
  get declared(): boolean {
    return this.#policy.declared;
  }

  /** What the attempt's event records of its source: only a source a SOURCES_FILE declared. */
  recorded({ source }: EgressChoice): { source?: string; sourceAddress?: string } {
    if (!this.declared) return {};
    return { source: source.name, ...(source.address && { sourceAddress: source.address }) };
  }

  /** What the MTA binds a connection to: only a source a SOURCES_FILE declared (else the machine's defaults). */
  bound({ source }: EgressChoice): { address?: string; helo?: string } | undefined {
    return this.declared ? { address: source.address, helo: source.helo } : undefined;
  }

  /** A source of the organization's pool for the lane with room at the group today, or when to look again. */
  async choose(orgId: string, lane: EgressLane, group: string): Promise<EgressAdmission> {
    const now = this.#clock.now();
    const pool = poolOf(this.#policy, orgId, lane);
    const members = pool.sources.map((name) => this.#byName.get(name) as EgressSource);
    const day = utcDay(now);
    for (const source of weightedOrder(members, this.#random)) {
      const cap = warmupCap(this.#policy.warmup, group, source.warmupStarted, now);
      if (cap === null) return { ok: true, choice: { source } };
      if (cap > 0 && (await this.#take(source.name, group, day, cap)))
        return { ok: true, choice: { source, counted: { group, day } } };
    }
    return {
      ok: false,
      until: nextDayStart(now),
      reason: `every source of the pool ${pool.name} is at its warm-up cap for ${group} today`,
    };
  }

  /**
   * A message's admission at its destination group: a source with room today, then the group's shaping; when
   * either says no, when to look again (ISO), the source's count given back.
   */
  async admit(
    orgId: string,
    lane: EgressLane,
    group: ShapingGroup,
    shaping: { admit(group: ShapingGroup): Promise<string | null> },
  ): Promise<EgressChoice | string> {
    const chosen = await this.choose(orgId, lane, group.name);
    if (!chosen.ok) return chosen.until.toISOString();
    const heldUntil = await shaping.admit(group);
    if (!heldUntil) return chosen.choice;
    await this.release(chosen.choice);
    return heldUntil;
  }

  /** Gives a counted message back (it was not sent after all: shaping held it, or another process had it). */
  async release(choice: EgressChoice): Promise<void> {
    if (!choice.counted) return;
    await this.#db.query(
      'UPDATE egress_warmup SET used = used - 1 WHERE day = $1 AND source = $2 AND grp = $3 AND used > 0',
      [choice.counted.day, choice.source.name, choice.counted.group],
    );
  }

  /** One message from the source's counter at the group today, if it is below `cap`. */
  async #take(source: string, group: string, day: string, cap: number): Promise<boolean> {
    await this.#prune(day);
    const { rows } = await this.#db.query(
      `INSERT INTO egress_warmup AS w (day, source, grp, used) VALUES ($1, $2, $3, 1)
ON CONFLICT (day, source, grp) DO UPDATE SET used = w.used + 1 WHERE w.used < $4
RETURNING w.used`,
      [day, source, group, cap],
    );
    return rows.length > 0;
  }

  /** Once a day per process: counters older than KEEP_DAYS go. */
  async #prune(day: string): Promise<void> {
    if (this.#prunedDay === day) return;
    this.#prunedDay = day;
    await this.#db.query(`DELETE FROM egress_warmup WHERE day < $1::date - ${KEEP_DAYS}`, [day]);
  }
}
