import type { WarmupSchedule } from './egress-sources.ts';

const DAY_MS = 86_400_000;

/**
 * Daily caps of a new address at each large provider's group over its first 30 days: roughly doubling in the
 * first week, then rising by a fifth to a quarter a day, as the providers' postmaster pages advise for a new IP.
 */
const PROVIDER_RAMP = [
  50, 100, 200, 300, 500, 700, 1_000, 1_500, 2_000, 3_000, 4_000, 5_000, 6_500, 8_000, 10_000, 12_500, 15_000,
  18_000, 21_000, 25_000, 30_000, 35_000, 40_000, 50_000, 60_000, 70_000, 80_000, 100_000, 125_000, 150_000,
];

/** Every other destination is a group of its own (one receiving MX): four times as much a day. */
const DEFAULT_RAMP = PROVIDER_RAMP.map((cap) => cap * 4);

/** The shipped schedule: the provider groups of shaping-defaults.ts share one ramp, every other group `default`. */
export const DEFAULT_WARMUP: WarmupSchedule = {
  default: DEFAULT_RAMP,
  google: PROVIDER_RAMP,
  microsoft: PROVIDER_RAMP,
  yahoo: PROVIDER_RAMP,
  icloud: PROVIDER_RAMP,
  'gmx-webde': PROVIDER_RAMP,
};

/** A UTC day's start, in ms since the epoch. */
const dayStart = (at: Date): number => Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate());

/** The UTC day of `at` as `YYYY-MM-DD`: the day a warm-up counter counts. */
export const utcDay = (at: Date): string => new Date(dayStart(at)).toISOString().slice(0, 10);

/** When the next UTC day begins: when a source at today's cap has room again. */
export const nextDayStart = (at: Date): Date => new Date(dayStart(at) + DAY_MS);

/** A source's warm-up day at `at`: 1 on the day it started, 0 or less before it. */
export const warmupDay = (started: string, at: Date): number =>
  Math.round((dayStart(at) - Date.parse(`${started}T00:00:00Z`)) / DAY_MS) + 1;

/**
 * What a source whose warm-up started on `started` may send to the group on the day of `at`: a number of
 * messages, 0 before its first day, or null (no cap) once the group's ramp is behind it. A group the schedule
 * does not name takes `default`'s ramp.
 */
export function warmupCap(
  schedule: WarmupSchedule,
  group: string,
  started: string | undefined,
  at: Date,
): number | null {
  if (started === undefined) return null;
  const day = warmupDay(started, at);
  if (day < 1) return 0;
  const ramp = schedule[group] ?? schedule.default ?? [];
  return day > ramp.length ? null : ramp[day - 1];
}
