import { Agent } from 'undici';
import { BoundedMap } from '../../platform/bounded-map.ts';
import { BlockedAddressError, checkLiteralHost, guardedLookup } from '../../platform/ssrf-guard.ts';
import { storableText } from '../../platform/storable-text.ts';

export interface SendOutcome {
  /** HTTP status, or null when no response came (refused, blocked, timed out). */
  status: number | null;
  retryAfter?: string;
  /** The first KB of the response body, for the delivery log. */
  excerpt: string | null;
  error: string | null;
}

interface Target {
  origin: string;
  /** Path and query, as sent. */
  path: string;
  /** Why no request is made (a malformed URL, a literal internal address), or null. */
  error: string | null;
}

const EXCERPT_BYTES = 1024;
/** Past this much response body the connection is dropped: receivers need not talk. */
const MAX_READ_BYTES = 64 * 1024;

/**
 * POSTs webhook bodies with undici's dispatcher interface (several times faster than global fetch, and cheaper
 * than its `request`, which builds a stream per response). One Agent keeps a pool of keep-alive connections per
 * endpoint origin. Redirects are never followed (a 3xx is a failed attempt), and unless private networks are
 * allowed every connection goes through the SSRF guard's lookup.
 */
export class WebhookSender {
  readonly #agent: Agent;
  readonly #timeoutMs: number;
  readonly #guard: boolean;

  constructor(options: { allowPrivateNetworks: boolean; timeoutMs: number; connectionsPerOrigin?: number }) {
    this.#timeoutMs = options.timeoutMs;
    this.#guard = !options.allowPrivateNetworks;
    this.#agent = new Agent({
      connect: this.#guard
        ? { lookup: guardedLookup as any, timeout: options.timeoutMs }
        : { timeout: options.timeoutMs },
      connections: options.connectionsPerOrigin ?? null,
      // The exchange's own deadline (Deadlines) covers the whole of it: undici's timers per request, off.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    this.#deadlines = new Deadlines(options.timeoutMs);
  }

  readonly #deadlines: Deadlines;

  /** Parsed endpoint URLs (origin, path, literal-address verdict): the same few URLs come back for every delivery. */
  readonly #targets = new BoundedMap<string, Target>(1000);

  #target(url: string): Target {
    let target = this.#targets.get(url);
    if (!target) {
      try {
        const parsed = new URL(url);
        const blocked = this.#guard ? checkLiteralHost(parsed) : null;
        target = {
          origin: parsed.origin,
          path: `${parsed.pathname}${parsed.search}`,
          error: blocked?.message ?? null,
        };
      } catch {
        target = { origin: '', path: '', error: 'invalid URL' };
      }
      this.#targets.set(url, target);
    }
    return target;
  }

  /** Resolves with the outcome, never rejects. */
  post(url: string, headers: Record<string, string>, body: string | Uint8Array): Promise<SendOutcome> {
    const target = this.#target(url);
    if (target.error) return Promise.resolve({ status: null, excerpt: null, error: target.error });
    return new Promise((resolve) => {
      const exchange = new Exchange(resolve, this.#timeoutMs);
      this.#deadlines.add(exchange);
      try {
        this.#agent.dispatch(
          { origin: target.origin, path: target.path, method: 'POST', headers, body },
          exchange,
        );
      } catch (error) {
        exchange.onError(error as Error);
      }
    });
  }

  async close(): Promise<void> {
    this.#deadlines.stop();
    await this.#agent.close();
  }
}

/**
 * Times exchanges out with one timer for all: they share one time-out, so they expire in the order they started,
 * and the timer only ever waits for the oldest unsettled one (a timer per request cost about as much as signing).
 * Settled exchanges leave the queue as new ones come (they finish roughly in the order they started): kept until
 * the timer fired, every exchange of the last 30 s stayed reachable, survived the young generation and was copied
 * by each scavenge.
 */
class Deadlines {
  readonly #timeoutMs: number;
  #queue: Exchange[] = [];
  #head = 0;
  /** Past this many entries, settled ones are also dropped from behind an unsettled head (a slow endpoint's). */
  #limit = 1024;
  #timer?: ReturnType<typeof setTimeout>;

  constructor(timeoutMs: number) {
    this.#timeoutMs = timeoutMs;
  }

  add(exchange: Exchange): void {
    exchange.deadline = performance.now() + this.#timeoutMs;
    this.#queue.push(exchange);
    this.#drop();
    this.#timer ??= setTimeout(this.#expire, this.#timeoutMs).unref();
  }

  /** Drops settled exchanges from the head, and from anywhere once the queue grows past its limit. */
  #drop(): void {
    while (this.#head < this.#queue.length && this.#queue[this.#head].settled) this.#head++;
    if (this.#queue.length - this.#head > this.#limit) {
      this.#queue = this.#queue.slice(this.#head).filter((e) => !e.settled);
      this.#head = 0;
      this.#limit = Math.max(1024, 2 * this.#queue.length);
    } else if (this.#head > 1024 || this.#head === this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }

  #expire = (): void => {
    this.#timer = undefined;
    const now = performance.now();
    while (this.#head < this.#queue.length) {
      const exchange = this.#queue[this.#head];
      if (!exchange.settled && exchange.deadline > now) break;
      this.#head++;
      if (!exchange.settled) exchange.timeOut();
    }
    this.#drop();
    const oldest = this.#queue[this.#head];
    if (oldest) this.#timer = setTimeout(this.#expire, Math.max(1, oldest.deadline - now)).unref();
  };

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

/** No response within the time-out (the whole exchange, connection included). */
class TimedOut extends Error {}
/** The receiver talks past MAX_READ_BYTES: the connection is dropped and what was read is kept. */
class TooLong extends Error {}

/** One request's handler: status, Retry-After and the first KB of the response, settled once. */
class Exchange {
  readonly #resolve: (outcome: SendOutcome) => void;
  readonly #timeoutMs: number;
  #abort?: (reason: Error) => void;
  settled = false;
  /** performance.now() past which it times out (see Deadlines). */
  deadline = 0;
  #status: number | null = null;
  #retryAfter?: string;
  #chunks: Buffer[] = [];
  #size = 0;

  constructor(resolve: (outcome: SendOutcome) => void, timeoutMs: number) {
    this.#resolve = resolve;
    this.#timeoutMs = timeoutMs;
  }

  /** No response within the time-out (see Deadlines). */
  timeOut(): void {
    this.#settle({ status: null, excerpt: null, error: `no response within ${this.#timeoutMs / 1000} s` });
    this.#abort?.(new TimedOut());
  }

  #settle(outcome: SendOutcome): void {
    if (this.settled) return;
    this.settled = true;
    this.#resolve(outcome);
  }

  #received(): SendOutcome {
    return {
      status: this.#status,
      retryAfter: this.#retryAfter,
      // The receiver's bytes: NUL and other controls out before they reach PostgreSQL.
      excerpt: this.#size
        ? storableText(Buffer.concat(this.#chunks).subarray(0, EXCERPT_BYTES).toString('utf8'), EXCERPT_BYTES)
        : null,
      error: null,
    };
  }

  onConnect(abort: (reason: Error) => void): void {
    if (this.settled) abort(new TimedOut());
    else this.#abort = abort;
  }

  onHeaders(status: number, rawHeaders: Buffer[]): boolean {
    if (status < 200) return true; // 1xx: the final answer follows
    this.#status = status;
    if (status >= 300) {
      for (let i = 0; i < rawHeaders.length; i += 2) {
        if (rawHeaders[i].length === 11 && rawHeaders[i].toString('latin1').toLowerCase() === 'retry-after') {
          this.#retryAfter = rawHeaders[i + 1].toString('latin1');
          break;
        }
      }
    }
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.#size < EXCERPT_BYTES) this.#chunks.push(chunk);
    this.#size += chunk.length;
    if (this.#size > MAX_READ_BYTES) this.#abort?.(new TooLong());
    return true;
  }

  onComplete(): void {
    this.#settle(this.#received());
  }

  onError(error: Error): void {
    if (error instanceof TooLong) {
      this.#settle(this.#received());
      return;
    }
    const timedOut =
      error instanceof TimedOut ||
      (error as any)?.code === 'UND_ERR_HEADERS_TIMEOUT' ||
      (error as any)?.code === 'UND_ERR_BODY_TIMEOUT';
    this.#settle({
      status: null,
      excerpt: null,
      error: timedOut ? `no response within ${this.#timeoutMs / 1000} s` : describe(error),
    });
  }
}

function describe(error: any): string {
  const cause = error?.cause ?? error;
  if (cause instanceof BlockedAddressError) return cause.message;
  const code = cause?.code && !String(cause.message).includes(cause.code) ? `${cause.code}: ` : '';
  return `${code}${cause?.message ?? String(error)}`.slice(0, 500);
}
