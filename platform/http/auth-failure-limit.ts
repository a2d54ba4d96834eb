import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { RateDecision, RateLimiter } from './rate-limit.ts';

const WINDOW_MS = 60_000;
/** Past this many blocked addresses the memory of blocks starts over, so rotating addresses cannot grow it. */
const MAX_BLOCKED = 10_000;

/** X-RateLimit-* (and Retry-After on a refusal) for a decision of this limit. */
export function authLimitHeaders(d: RateDecision): Record<string, string> {
  const reset = String(Math.max(1, Math.ceil(d.resetMs / 1000)));
  return {
    'X-RateLimit-Limit': String(d.limit),
    'X-RateLimit-Remaining': String(d.remaining),
    'X-RateLimit-Reset': reset,
    ...(d.allowed ? {} : { 'Retry-After': reset }),
  };
}

/**
 * Key guessing is slowed: at most `limit` failed authentications per client address and minute, counted in the
 * shared rate-limit store so that every process sees them. Past the limit every request from that address that
 * presents a key answers 429 `rate_limit_exceeded` until the minute ends, valid keys included, and without the
 * key being looked up: otherwise each guess would still cost a look-up and a right guess would stand out. Blocks
 * are remembered in this process, so a blocked address costs no round trip to the store either.
 */
export class AuthFailureLimit {
  readonly #limiter: RateLimiter;
  readonly #limit: number;
  readonly #clock: Clock;
  readonly #blocked = new Map<string, number>();

  constructor(limiter: RateLimiter, limit: number, clock: Clock) {
    this.#limiter = limiter;
    this.#limit = limit;
    this.#clock = clock;
  }

  /** Throws the 429 when `address` is over the limit in the current window. */
  check(address: string): void {
    const now = this.#clock.now().getTime();
    const until = this.#blocked.get(address);
    if (until === undefined) return;
    if (now >= until) {
      this.#blocked.delete(address);
      return;
    }
    this.#refuse({ allowed: false, limit: this.#limit, remaining: 0, resetMs: until - now });
  }

  /** Counts a failed authentication; returns the headers for the 401, or throws the 429 when over the limit. */
  async fail(address: string): Promise<Record<string, string>> {
    const now = this.#clock.now().getTime();
    const d = await this.#limiter.hit(`auth-failures:${address}`, this.#limit, now, WINDOW_MS);
    if (d.allowed) return authLimitHeaders(d);
    if (this.#blocked.size >= MAX_BLOCKED) this.#blocked.clear();
    this.#blocked.set(address, now + d.resetMs);
    return this.#refuse(d);
  }

  #refuse(d: RateDecision): never {
    const headers = authLimitHeaders(d);
    throw new AppError(
      'rate_limit_exceeded',
      `Too many failed authentications from this address: at most ${this.#limit} a minute. Retry after ${headers['Retry-After']} s.`,
      headers,
    );
  }
}
