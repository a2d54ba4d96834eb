import type { Redis } from 'ioredis';
import { Batcher, GROUP_COMMIT } from '../batcher.ts';
import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import type { Migration } from '../db/migrations.ts';
import { AppError } from '../errors.ts';
import type { Logger } from '../logger.ts';

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

/**
 * The counter of an organization's budget of RATE_LIMIT_RPS: every request of its API keys, of both modes (the
 * API's, platform/http/app.ts), and every message its keys submit to the SMTP relay (smtp/relay.ts).
 */
export const organizationRateKey = (orgId: string) => `${orgId}:all`;

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

const unavailable = () =>
  new AppError('database_unavailable', 'The rate-limit counters are unavailable; retry shortly.', {
    'Retry-After': '1',
  });

/**
 * While Redis is away a request cannot be counted: it is answered 503 `database_unavailable` with Retry-After, as
 * while PostgreSQL is away (docs/operations.md), and the log says so once per outage (`log`). It is answered at
 * once, not after the client's reconnection attempts; only the counts made before the first connection attempt
 * ended wait for it (at most the client's `commandTimeout`). A count sent just before a connection was lost is
 * answered by Redis or rejected (503), never taken for done.
 */
export class RedisRateLimiter implements RateLimiter {
  readonly #redis: RedisWithHit;
  /** Until the first connection is made or fails, counts wait in the client's queue. */
  #starting = true;
  constructor(redis: Redis, log?: Pick<Logger, 'warn' | 'info'>) {
    redis.defineCommand('postlineHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    this.#redis = redis as RedisWithHit;
    // Without a listener ioredis prints every failed reconnection's stack to stderr.
    let away = false;
    redis.on('error', (err) => {
      this.#starting = false;
      if (!away)
        log?.warn({ err }, 'Redis (rate-limit counters) unavailable: requests answer 503 until it is back');
      away = true;
    });
    redis.on('close', () => {
      this.#starting = false;
    });
    redis.on('ready', () => {
      this.#starting = false;
      if (away) log?.info('Redis (rate-limit counters) reachable again');
      away = false;
    });
  }
  async hit(key: string, limit: number, now: number, windowMs = WINDOW_MS) {
    if (this.#redis.status !== 'ready' && !this.#starting) throw unavailable();
    const count = await this.#redis
      .postlineHit(`postline:rl:${key}:${windowMs}:${Math.floor(now / windowMs)}`, windowMs * 2)
      .catch(() => {
        throw unavailable();
      });
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

/** One hit of a counter: its key (with the window's length) and the window's start. */
interface CounterHit {
  key: string;
  windowStart: number;
}

/**
 * Counts the hits of requests in flight together in one statement (`Batcher`): each counter goes up by its hits at
 * once, and each hit learns its own count (the new total less the hits after it), exact across processes as one
 * upsert a hit would be. Counters are taken in key order, so two processes never wait on each other's rows.
 */
const COUNT_SQL = `
INSERT INTO rate_limit_counters (key, window_start, count)
SELECT * FROM unnest($1::text[], $2::bigint[], $3::int[]) ORDER BY 1, 2
ON CONFLICT (key, window_start) DO UPDATE SET count = rate_limit_counters.count + EXCLUDED.count
RETURNING key, window_start, count`;

async function countHits(db: Database, hits: CounterHit[]): Promise<number[]> {
  const id = (h: { key: string; windowStart: number | string }) => `${h.windowStart}\0${h.key}`;
  const added = new Map<string, CounterHit & { n: number }>();
  const place = hits.map((h) => {
    const counter = added.get(id(h)) ?? { ...h, n: 0 };
    added.set(id(h), counter);
    return ++counter.n;
  });
  const counters = [...added.values()];
  const { rows } = await db.query<{ key: string; window_start: string; count: number }>(COUNT_SQL, [
    counters.map((c) => c.key),
    counters.map((c) => c.windowStart),
    counters.map((c) => c.n),
  ]);
  const totals = new Map(rows.map((r) => [id({ key: r.key, windowStart: r.window_start }), r.count]));
  return hits.map((h, i) => totals.get(id(h))! - added.get(id(h))!.n + place[i]);
}

export class PostgresRateLimiter implements RateLimiter {
  readonly #db: Database;
  readonly #hits: Batcher<CounterHit, number>;
  #lastSweep = 0;
  constructor(db: Database) {
    this.#db = db;
    this.#hits = new Batcher({ run: (hits) => countHits(db, hits), ...GROUP_COMMIT });
  }
  /** `window_start` is the window's start in milliseconds, so windows of any length sweep alike. */
  async hit(key: string, limit: number, now: number, windowMs = WINDOW_MS) {
    const count = await this.#hits.add({ key: `${key}:${windowMs}`, windowStart: now - (now % windowMs) });
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
    return decide(count, limit, now, windowMs);
  }
  async close() {}
}

/**
 * The rate limiter `config` asks for: Redis's with REDIS_URL (its client loaded only then), else PostgreSQL's.
 * Auto-pipelining: the counts of requests arriving together go to Redis in one write. A count Redis does not answer
 * within commandTimeout (a connection lost without a word) is answered 503, not waited for.
 */
export async function openRateLimiter(
  config: Pick<Config, 'REDIS_URL'>,
  db: Database,
  log?: Logger,
): Promise<RateLimiter> {
  if (!config.REDIS_URL) return new PostgresRateLimiter(db);
  const { Redis } = await import('ioredis');
  const redis = new Redis(config.REDIS_URL, {
    lazyConnect: false,
    maxRetriesPerRequest: 2,
    commandTimeout: 1000,
    enableAutoPipelining: true,
  });
  return new RedisRateLimiter(redis, log);
}
