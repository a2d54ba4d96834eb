import type { Redis } from 'ioredis';
import type { Database } from '../db/database.ts';
import type { Migration } from '../db/migrations.ts';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Milliseconds until the window resets. */
  resetMs: number;
}

/**
 * Fixed windows per key (one second unless `windowMs` says otherwise; at most MAX_WINDOW_MS). The counter store
 * is shared by every process: Redis when REDIS_URL is set, else the database (the embedded one too). The one in
 * memory serves a single process (tests).
 */
export interface RateLimiter {
  hit(key: string, limit: number, now: number, windowMs?: number): Promise<RateDecision>;
  close(): Promise<void>;
}

const WINDOW_MS = 1000;
/** The longest window a caller may ask for: counters older than twice this are swept. */
export const MAX_WINDOW_MS = 60_000;
const decide = (count: number, limit: number, now: number, windowMs: number): RateDecision => ({
  allowed: count <= limit,
  limit,
  remaining: Math.max(0, limit - count),
  resetMs: windowMs - (now % windowMs),
});

export class MemoryRateLimiter implements RateLimiter {
  /** Per window length: the current window and its counts (a new window starts them over). */
  readonly #windows = new Map<number, { window: number; counts: Map<string, number> }>();
  async hit(key: string, limit: number, now: number, windowMs = WINDOW_MS) {
    const window = Math.floor(now / windowMs);
    let current = this.#windows.get(windowMs);
    if (current?.window !== window) {
      current = { window, counts: new Map() };
      this.#windows.set(windowMs, current);
    }
    const count = (current.counts.get(key) ?? 0) + 1;
    current.counts.set(key, count);
    return decide(count, limit, now, windowMs);
  }
  async close() {}
}

/** Counts a hit and starts the window's expiry with the first one: one command, atomic. */
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return count`;

type RedisWithHit = Redis & { postlineHit(key: string, ttlMs: number): Promise<number> };

export class RedisRateLimiter implements RateLimiter {
  readonly #redis: RedisWithHit;
  constructor(redis: Redis) {
    redis.defineCommand('postlineHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    this.#redis = redis as RedisWithHit;
  }
  async hit(key: string, limit: number, now: number, windowMs = WINDOW_MS) {
    const count = await this.#redis.postlineHit(
      `postline:rl:${key}:${windowMs}:${Math.floor(now / windowMs)}`,
      windowMs * 2,
    );
    return decide(count, limit, now, windowMs);
  }
  async close() {
    this.#redis.disconnect();
  }
}

/** Counters are worth nothing after a crash: unlogged, they cost no WAL. */
export const rateLimitMigrations: Migration[] = [
  {
    id: 'rate-limits-001',
    sql: `
CREATE UNLOGGED TABLE rate_limit_counters (
  key text NOT NULL,
  window_start bigint NOT NULL,
  count integer NOT NULL,
  PRIMARY KEY (key, window_start)
)`,
  },
];

export class PostgresRateLimiter implements RateLimiter {
  readonly #db: Database;
  #lastSweep = 0;
  constructor(db: Database) {
    this.#db = db;
  }
  /** `window_start` is the window's start in milliseconds, so windows of any length sweep alike. */
  async hit(key: string, limit: number, now: number, windowMs = WINDOW_MS) {
    const windowStart = now - (now % windowMs);
    const { rows } = await this.#db.query<{ count: number }>(
      `INSERT INTO rate_limit_counters (key, window_start, count) VALUES ($1, $2, 1)
       ON CONFLICT (key, window_start) DO UPDATE SET count = rate_limit_counters.count + 1 RETURNING count`,
      [`${key}:${windowMs}`, windowStart],
    );
    if (now - this.#lastSweep > MAX_WINDOW_MS) {
      this.#lastSweep = now;
      // Housekeeping, not the request's business: a sweep that fails (the database away) is tried again at
      // the next one, and the request that happened to start it keeps its answer.
      void this.#db
        .query('DELETE FROM rate_limit_counters WHERE window_start < $1', [now - 2 * MAX_WINDOW_MS])
        .catch(() => {
          this.#lastSweep = 0;
        });
    }
    return decide(rows[0].count, limit, now, windowMs);
  }
  async close() {}
}
