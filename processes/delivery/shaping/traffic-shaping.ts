import type { ShapingGroup, ShapingPolicy } from '../../../domain/delivery/shaping-groups.ts';
import {
  BACKOFF_BASE_MS,
  BACKOFF_CAP_MS,
  groupOf,
  MIN_RATE_FACTOR,
  replyAction,
  type ShapingReply,
} from '../../../domain/delivery/shaping-rules.ts';
import { BoundedMap } from '../../../platform/bounded-map.ts';
import type { Clock } from '../../../platform/clock.ts';
import type { Database } from '../../../platform/db/database.ts';
import type { Logger } from '../../../platform/logger.ts';
import { ADMIT_SQL, type AdmitRow, factorAt } from './gcra-statement.ts';

export type Admission = { ok: true } | { ok: false; until: Date; reason: string };

export interface TrafficShapingOptions {
  db: Database;
  clock: Clock;
  log: Logger;
  /** The shaping file as it applies (`services.policies.shaping`). */
  policy: ShapingPolicy;
  /** Every message goes through a smarthost: one group, `smarthost`. */
  smarthost?: boolean;
}

/** A halving takes effect at most once a minute: the refusals of messages already in flight count once. */
const HALVE_AT_MOST_EVERY_S = 60;
/** Held reasons quote the reply that caused them, this long at most. */
const REASON_CHARS = 300;
const KNOWN_LEVELS = 10_000;
const UNLIMITED = 1e9;

/**
 * Traffic shaping per destination group, shared by every process through `shaping_groups`
 * (docs/deliverability.md, "Traffic shaping"): `admit` before a message goes out, `observe` each reply.
 */
export class TrafficShaping {
  readonly #o: TrafficShapingOptions;
  /** The back-off level each group had when this process last admitted to it: a delivery resets only a level > 0. */
  readonly #levels = new BoundedMap<string, number>(KNOWN_LEVELS);

  constructor(options: TrafficShapingOptions) {
    this.#o = { ...options, log: options.log.child({ component: 'shaping' }) };
  }

  /** The group of a destination by its MX host names (in preference order): pure, from the shaping file. */
  groupOf(domain: string, mxHosts: readonly string[]): ShapingGroup {
    return groupOf(this.#o.policy, domain, mxHosts, { smarthost: this.#o.smarthost });
  }

  /**
   * Takes `messages` from the group's rates, or says when to try again: while the group is held (a pause or a
   * back-off) until the hold ends, otherwise when its per-minute and per-hour rates let them through. One
   * statement; a refusal writes nothing.
   */
  async admit(group: ShapingGroup, messages = 1): Promise<Admission> {
    const now = this.#o.clock.now();
    const { perMinute, perHour } = group.limits;
    const { rows } = await this.#o.db.query<AdmitRow>(ADMIT_SQL, [
      group.name,
      now.toISOString(),
      messages,
      // A rate without a limit: one no sending ever reaches.
      perMinute ?? UNLIMITED,
      perHour ?? UNLIMITED,
    ]);
    const row = rows[0];
    if (row?.admitted_level !== null && row?.admitted_level !== undefined) {
      this.#levels.set(group.name, row.admitted_level);
      return { ok: true };
    }
    if (row?.backoff_level !== null && row?.backoff_level !== undefined)
      this.#levels.set(group.name, row.backoff_level);
    return refusal(row, now, group);
  }

  /**
   * Applies what a reply says about its group (domain/delivery/shaping-rules.ts `replyAction`): a pause holds the
   * group, a halving lowers its rates, a `rate_limited` reply backs it off; a delivery ends a back-off. Writes
   * only when something changes.
   */
  async observe(group: ShapingGroup, reply: ShapingReply): Promise<void> {
    const now = this.#o.clock.now().toISOString();
    if (reply.result === 'delivered') return this.#recovered(group, now);
    const action = replyAction(reply, group);
    const said = reply.smtpResponse.slice(0, REASON_CHARS);
    if (action.kind === 'pause') {
      const { rowCount } = await this.#o.db.query(
        `INSERT INTO shaping_groups AS g (grp, held_until, held_reason, updated_at)
VALUES ($1, $2::timestamptz + make_interval(secs => $3::float8), $4, $2::timestamptz)
ON CONFLICT (grp) DO UPDATE SET held_until = EXCLUDED.held_until, held_reason = EXCLUDED.held_reason, updated_at = EXCLUDED.updated_at
WHERE g.held_until IS NULL OR g.held_until < EXCLUDED.held_until`,
        [group.name, now, action.forMs / 1000, `paused by a reply rule: ${said}`],
      );
      if (rowCount > 0)
        this.#o.log.info({ group: group.name, forMs: action.forMs, reply: said }, 'group paused');
    } else if (action.kind === 'halve') {
      const { rows } = await this.#o.db.query<{ rate_factor: number }>(
        `INSERT INTO shaping_groups AS g (grp, rate_factor, halved_at, updated_at) VALUES ($1, 0.5, $2::timestamptz, $2::timestamptz)
ON CONFLICT (grp) DO UPDATE SET rate_factor = greatest($3::float8, ${factorAt('$2::timestamptz')} / 2), halved_at = $2::timestamptz, updated_at = $2::timestamptz
WHERE g.halved_at IS NULL OR g.halved_at <= $2::timestamptz - make_interval(secs => ${HALVE_AT_MOST_EVERY_S})
RETURNING g.rate_factor`,
        [group.name, now, MIN_RATE_FACTOR],
      );
      if (rows[0])
        this.#o.log.info(
          { group: group.name, factor: rows[0].rate_factor, reply: said },
          'group rate halved',
        );
    } else if (action.kind === 'backoff') await this.#backOff(group, now, said);
  }

  /** A `rate_limited` reply: the group is held for the next step of the curve, unless already held. */
  async #backOff(group: ShapingGroup, now: string, said: string): Promise<void> {
    const { rows } = await this.#o.db.query<{ backoff_level: number; held_until: Date }>(
      `INSERT INTO shaping_groups AS g (grp, backoff_level, held_until, held_reason, updated_at)
VALUES ($1, 1, $2::timestamptz + make_interval(secs => $3::float8), $5, $2::timestamptz)
ON CONFLICT (grp) DO UPDATE SET backoff_level = g.backoff_level + 1,
  held_until = $2::timestamptz + make_interval(secs => least($4::float8, $3::float8 * power(2, g.backoff_level))),
  held_reason = EXCLUDED.held_reason, updated_at = EXCLUDED.updated_at
WHERE g.held_until IS NULL OR g.held_until <= $2::timestamptz
RETURNING g.backoff_level, g.held_until`,
      [group.name, now, BACKOFF_BASE_MS / 1000, BACKOFF_CAP_MS / 1000, `backed off after: ${said}`],
    );
    const row = rows[0];
    if (!row) return;
    this.#levels.set(group.name, row.backoff_level);
    this.#o.log.info(
      { group: group.name, level: row.backoff_level, until: row.held_until, reply: said },
      'group backed off',
    );
  }

  /** A delivery after a back-off ends it: the next slow-down reply starts the curve again at 1 min. */
  async #recovered(group: ShapingGroup, now: string): Promise<void> {
    if (!this.#levels.get(group.name)) return;
    await this.#o.db.query(
      'UPDATE shaping_groups SET backoff_level = 0, updated_at = $2 WHERE grp = $1 AND backoff_level > 0',
      [group.name, now],
    );
    this.#levels.set(group.name, 0);
  }

  /**
   * When the group's hold (a pause or a back-off) ends, or null when it is not held. Its back-off level is noted
   * as `admit` notes it, so that a delivery here ends a back-off another process started.
   */
  async heldUntil(groupName: string): Promise<Date | null> {
    const now = this.#o.clock.now();
    const { rows } = await this.#o.db.query<{ held_until: Date | null; backoff_level: number }>(
      'SELECT held_until, backoff_level FROM shaping_groups WHERE grp = $1',
      [groupName],
    );
    const row = rows[0];
    if (!row) return null;
    this.#levels.set(groupName, row.backoff_level);
    return row.held_until && row.held_until > now ? row.held_until : null;
  }
}

/** A refusal's answer: the latest of the hold's end and each rate's next opening that lies ahead. */
function refusal(row: AdmitRow | undefined, now: Date, group: ShapingGroup): Admission {
  const ahead = (d: Date | null | undefined) => (d && d.getTime() > now.getTime() ? d.getTime() : 0);
  const held = ahead(row?.held_until);
  const minute = ahead(row?.minute_at);
  const hour = ahead(row?.hour_at);
  const latest = Math.max(held, minute, hour);
  // A row another process inserted after this statement's snapshot: try again after one emission interval.
  const until = new Date(latest || now.getTime() + Math.ceil(60_000 / (group.limits.perMinute ?? UNLIMITED)));
  const reason =
    latest === held && held > 0
      ? `held: ${row?.held_reason ?? 'paused'}`
      : latest === hour && hour > 0
        ? `rate: ${group.limits.perHour} per hour for ${group.name}`
        : `rate: ${group.limits.perMinute} per minute for ${group.name}`;
  return { ok: false, until, reason };
}
