import type { NextFunction, Request, Response } from 'express';
import type { AuthContext } from '../auth/auth-context.ts';
import { AppError } from '../errors.ts';
import type { Services } from '../services.ts';

/**
 * Counts one request against the organization's bucket and sets X-RateLimit-Limit, X-RateLimit-Remaining and
 * X-RateLimit-Reset (seconds until the window resets); a 429 carries Retry-After. A stricter route bucket
 * (batch sending) overwrites the headers with its own figures.
 */
export async function applyRateLimit(
  services: Services,
  res: Response,
  auth: AuthContext,
  limit: number,
  bucket: string,
) {
  return limitRequest(services, res, `${auth.orgId}:${bucket}`, limit);
}

/**
 * The handlers that take requests without a key (tracking links, downloads) are limited per client address
 * (PUBLIC_RATE_LIMIT_RPS), with the same headers.
 */
export function publicRateLimit(services: Services) {
  return (req: Request, res: Response, next: NextFunction) => {
    limitRequest(services, res, publicRateKey(req), services.config.PUBLIC_RATE_LIMIT_RPS).then(
      () => next(),
      next,
    );
  };
}

/** The bucket of requests without a key: the client's address. */
export const publicRateKey = (req: Request) => `public:${req.ip ?? 'unknown'}`;

/** Counts a request in `key`'s bucket, sets the headers, and throws the 429 when over `limit`. */
export async function limitRequest(services: Services, res: Response, key: string, limit: number) {
  const d = await services.rateLimiter.hit(key, limit, services.clock.now().getTime());
  const reset = Math.max(1, Math.ceil(d.resetMs / 1000));
  res.set({
    'X-RateLimit-Limit': String(d.limit),
    'X-RateLimit-Remaining': String(d.remaining),
    'X-RateLimit-Reset': String(reset),
  });
  if (!d.allowed) {
    throw new AppError(
      'rate_limit_exceeded',
      `Too many requests: at most ${limit} per second. Retry after ${reset} s.`,
      {
        'Retry-After': String(reset),
      },
    );
  }
}
