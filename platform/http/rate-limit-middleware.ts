import type { Response } from 'express';
import { AppError } from '../errors.ts';
import type { Services } from '../services.ts';
import type { AuthContext } from './auth-context.ts';

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
  const now = Date.now();
  const d = await services.rateLimiter.hit(`${auth.orgId}:${bucket}`, limit, now);
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
