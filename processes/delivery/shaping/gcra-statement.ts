import {
  HOUR_BURST_SHARE,
  MINUTE_BURST_SHARE,
  RATE_RECOVERY_MS,
} from '../../../domain/delivery/shaping-rules.ts';

/**
 * The admission statement: GCRA (the generic cell rate algorithm) on a group's per-minute and per-hour rates, in
 * one upsert whose WHERE admits or refuses under the row's lock, so that any number of processes share the rates.
 *
 * Each rate r (messages per window W, times the group's rate factor) has an emission interval T = W / r and a
 * burst b (domain/delivery/shaping-rules.ts). A request for n messages at time t is admitted when
 * max(TAT, t) + n·T <= t + max(b, n)·T, and then TAT becomes max(TAT, t) + n·T. Over any interval of length L at
 * most max(b, n) + L / T messages are admitted. Parameters: $1 group, $2 now, $3 n, $4 per minute, $5 per hour.
 */
const NOW = '$2::timestamptz';
const N = '$3::float8';

/**
 * A group's rate factor at `now` (an SQL expression over the row `g`): the stored one doubled per quiet hour since
 * it was halved, at most 1 (`effectiveFactor` in domain/delivery/shaping-rules.ts).
 */
export const factorAt = (now: string) =>
  `least(1, g.rate_factor * power(2, floor(greatest(0, extract(epoch FROM ${now} - coalesce(g.halved_at, ${now}))::float8) / ${RATE_RECOVERY_MS / 1000})))`;
const FACTOR = factorAt(NOW);

function rate(column: 'minute_tat' | 'hour_tat', perWindow: string, windowS: number, burstShare: number) {
  const r = `(${perWindow}::float8 * ${FACTOR})`;
  const t = `(${windowS} / ${r})`;
  const b = `greatest(ceil(${r} / ${burstShare}), 1, ${N})`;
  const next = `greatest(g.${column}, ${NOW}) + make_interval(secs => ${N} * ${t})`;
  return {
    next,
    conforms: `${next} <= ${NOW} + make_interval(secs => ${b} * ${t})`,
    /** When n messages would conform, read from the statement's snapshot for a refusal's answer. */
    retryAt: `g.${column} - make_interval(secs => (${b} - ${N}) * ${t})`,
  };
}

const minute = rate('minute_tat', '$4', 60, MINUTE_BURST_SHARE);
const hour = rate('hour_tat', '$5', 3600, HOUR_BURST_SHARE);

/**
 * Admits (updating the row) or refuses (writing nothing). One row comes back: `admitted_level` set when
 * admitted (the group's back-off level); otherwise the row as the statement's snapshot saw it, with when each
 * rate would let the messages through. A first request of a group inserts its row, admitted.
 */
export const ADMIT_SQL = `WITH admitted AS (
  INSERT INTO shaping_groups AS g (grp, minute_tat, hour_tat, updated_at)
  VALUES ($1, ${NOW} + make_interval(secs => ${N} * 60 / $4::float8), ${NOW} + make_interval(secs => ${N} * 3600 / $5::float8), ${NOW})
  ON CONFLICT (grp) DO UPDATE SET minute_tat = ${minute.next}, hour_tat = ${hour.next}, updated_at = ${NOW}
  WHERE (g.held_until IS NULL OR g.held_until <= ${NOW}) AND ${minute.conforms} AND ${hour.conforms}
  RETURNING g.backoff_level
)
SELECT a.backoff_level AS admitted_level, g.backoff_level, g.held_until, g.held_reason,
  ${minute.retryAt} AS minute_at, ${hour.retryAt} AS hour_at
FROM (SELECT 1) one
LEFT JOIN admitted a ON true
LEFT JOIN shaping_groups g ON g.grp = $1 AND a.backoff_level IS NULL`;

export interface AdmitRow {
  admitted_level: number | null;
  backoff_level: number | null;
  held_until: Date | null;
  held_reason: string | null;
  minute_at: Date | null;
  hour_at: Date | null;
}
