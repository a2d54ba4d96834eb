import type { Clock } from '../clock.ts';
import { AppError } from '../errors.ts';
import type { RateDecision, RateLimiter } from '../http/rate-limit.ts';
import type { AuthContext, Authenticate } from './auth-context.ts';

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
 * The one rule for a presented API key, over HTTP and SMTP alike: a valid key is served, always; an unknown one
 * is a failure, counted per client address in the shared rate-limit store (every process sees it), and past
 * `limit` failures a minute the address's unknown keys are refused (429 `rate_limit_exceeded`, SMTP 421) until
 * the minute ends. Only failures are limited: whoever shares an address with a guesser (clients behind one proxy,
 * or anyone when TRUST_PROXY is missing) keeps working with its own key. A guess past the limit is still looked
 * up (a key has 238 bits, so a guess never hits); blocked addresses are remembered in this process, so their
 * failures cost no round trip to the store.
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

  /**
   * The caller of `key` presented from `address`; throws 401 `invalid_api_key` (with X-RateLimit-*) for an
   * unknown or missing key, or the 429 once the address is over the limit.
   */
  async authenticate(address: string, key: string | undefined, lookUp: Authenticate): Promise<AuthContext> {
    const auth = key ? await lookUp(key) : null;
    if (auth) return auth;
    const headers = await this.#fail(address);
    throw new AppError('invalid_api_key', 'The API key is invalid or was deleted.', headers);
  }

  /** Counts a failed authentication; returns the headers for the 401, or throws the 429 when over the limit. */
  async #fail(address: string): Promise<Record<string, string>> {
    const now = this.#clock.now().getTime();
    const until = this.#blocked.get(address);
    if (until !== undefined && now < until)
      this.#refuse({ allowed: false, limit: this.#limit, remaining: 0, resetMs: until - now });
    if (until !== undefined) this.#blocked.delete(address);
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
