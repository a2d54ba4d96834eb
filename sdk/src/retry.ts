/** Statuses worth sending again: the rate limit, and a server that is busy, shutting down or lost its database. */
const RETRIED = new Set([429, 503]);

export interface RetryOptions {
  /** Attempts after the first (default 3). */
  maxRetries: number;
  /** Longest wait between attempts in ms, whatever Retry-After says (default 30 s). */
  maxDelayMs: number;
  fetch: (request: Request) => Promise<Response>;
}

/**
 * How long to wait before attempt `attempt` (1-based): Retry-After when given, else 0.5 s doubling, at most
 * `maxDelayMs`; null when Retry-After asks for longer (a monthly quota's, say): an earlier try would only be
 * refused again, so the answer is the caller's at once.
 */
export function retryDelayMs(response: Response, attempt: number, maxDelayMs: number): number | null {
  const header = response.headers.get('retry-after');
  const seconds = header === null ? Number.NaN : Number(header);
  if (Number.isFinite(seconds) && seconds * 1000 > maxDelayMs) return null;
  const ms = Number.isFinite(seconds) ? seconds * 1000 : 500 * 2 ** (attempt - 1);
  return Math.min(Math.max(ms, 0), maxDelayMs);
}

/**
 * A fetch that sends a request again on 429 and 503, honouring Retry-After. The request is sent again as it was,
 * its Idempotency-Key included, so a retried send never sends twice.
 */
export function retryingFetch(options: RetryOptions) {
  return async (request: Request): Promise<Response> => {
    const original = request.clone();
    let response = await options.fetch(request);
    for (let attempt = 1; attempt <= options.maxRetries && RETRIED.has(response.status); attempt++) {
      const wait = retryDelayMs(response, attempt, options.maxDelayMs);
      if (wait === null) break;
      await response.body?.cancel();
      await new Promise((wake) => setTimeout(wake, wait));
      response = await options.fetch(original.clone());
    }
    return response;
  };
}
