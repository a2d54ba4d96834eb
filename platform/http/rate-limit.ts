import type { Redis } from 'ioredis';
import type { Database } from '../db/database.ts';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Milliseconds until the window resets. */
  resetMs: number;
}

/**
 * Fixed one-second windows per key. The counter store is shared by every process when there are several:
 * Redis when REDIS_URL is set, else the database; in memory only in embedded mode (one process).
 */
export interface RateLimiter {
  hit(key: string, limit: number, now: number): Promise<RateDecision>;
  close(): Promise<void>;
}

const WINDOW_MS = 1000;
const decide = (count: number, limit: number, now: number): RateDecision => ({
  allowed: count <= limit,
  limit,
  remaining: Math.max(0, limit - count),
  resetMs: WINDOW_MS - (now % WINDOW_MS),
});

export class MemoryRateLimiter implements RateLimiter {
  readonly #counts = new Map<string, number>();
  #window = 0;
  async hit(key: string, limit: number, now: number) {
    const window = Math.floor(now / WINDOW_MS);
    if (window !== this.#window) {
      this.#counts.clear();
      this.#window = window;
    }
    const count = (this.#counts.get(key) ?? 0) + 1;
    this.#counts.set(key, count);
    return decide(count, limit, now);
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
  async hit(key: string, limit: number, now: number) {
    const count = await this.#redis.postlineHit(
      `postline:rl:${key}:${Math.floor(now / WINDOW_MS)}`,
      WINDOW_MS * 2,
    );
    return decide(count, limit, now);
  }
  async close() {
    this.#redis.disconnect();
  }
}

export const RATE_LIMIT_SCHEMA = `
CREATE UNLOGGED TABLE IF NOT EXISTS rate_limit_counters (
  key text NOT NULL,
  window_start bigint NOT NULL,
  count integer NOT NULL,
  PRIMARY KEY (key, window_start)
)`;

export class PostgresRateLimiter implements RateLimiter {
  readonly #db: Database;
  #lastSweep = 0;
  constructor(db: Database) {
    this.#db = db;
  }
  async hit(key: string, limit: number, now: number) {
    const window = Math.floor(now / WINDOW_MS);
    const { rows } = await this.#db.query<{ count: number }>(
      `INSERT INTO rate_limit_counters (key, window_start, count) VALUES ($1, $2, 1)
       ON CONFLICT (key, window_start) DO UPDATE SET count = rate_limit_counters.count + 1 RETURNING count`,
      [key, window],
    );
    if (now - this.#lastSweep > 60_000) {
      this.#lastSweep = now;
      await this.#db.query('DELETE FROM rate_limit_counters WHERE window_start < $1', [window - 60]);
    }
    return decide(rows[0].count, limit, now);
  }
  async close() {}
}
