import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { observeHttp } from '../metrics.ts';
import type { Services } from '../services.ts';
import type { ApiRouter } from './router.ts';

/**
 * First path segments whose rest is a capability: an unsubscribe link's token (`/unsubscribe/<token>`), a tracking
 * token (`/t/o/<token>.gif`, `/t/c/<token>`). Whoever holds one may unsubscribe its contact or record an open or a
 * click, so the log shows such a path without it. `t` keeps its next segment when that names the kind (`o`, `c`).
 */
const CAPABILITY_SEGMENTS: Record<string, RegExp | undefined> = { unsubscribe: undefined, t: /^[oc]$/i };

const decoded = (segment: string) => {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
};

/**
 * A request's path as the log shows it: as it came, except the capability of `/unsubscribe/…` and `/t/…`, written
 * `[redacted]`, and an email address (a contact named by it, as Resend's SDK does), written `[address]`: personal
 * data stays out of the log. Matched as the router matches and more loosely (any case, any number of slashes,
 * percent-encoded or not), for paths that route nowhere too: a mistyped link carries its token all the same.
 */
export function loggablePath(path: string): string {
  // Segments at the even places, the separators between them (a slash, or one percent-encoded) at the odd ones.
  const parts = path
    .split(/(\/|%2f)/i)
    .map((s, i) => (i % 2 === 0 && decoded(s).includes('@') ? '[address]' : s));
  let at = parts.findIndex((s, i) => i % 2 === 0 && s !== '');
  const name = at < 0 ? '' : decoded(parts[at]).toLowerCase();
  if (!Object.hasOwn(CAPABILITY_SEGMENTS, name)) return parts.join('');
  at += 2;
  const kind = CAPABILITY_SEGMENTS[name];
  if (kind && at < parts.length && kind.test(decoded(parts[at]))) at += 2;
  if (parts.slice(at).every((s, i) => i % 2 === 1 || s === '')) return parts.join('');
  return `${parts.slice(0, at).join('')}[redacted]`;
}

/**
 * The route a request went to, as its pattern (`/v1/emails/:email_id`), for metrics: the handler's, or for a /v1
 * request answered before routing (401, 429) the API route it names; `unmatched` otherwise.
 */
function routeOf(req: Request, router: ApiRouter | undefined): string {
  if (req.route) return `${req.baseUrl}${req.route.path}`;
  const path = req.originalUrl.split('?')[0];
  if (!path.startsWith('/v1/') || !router) return 'unmatched';
  try {
    const api = router.routes.find((r) => r.method === req.method && r.matches(path.slice(3)));
    return api ? `/v1${api.path}` : 'unmatched';
  } catch {
    return 'unmatched'; // a path that is not percent-encoded UTF-8 (answered 400)
  }
}

/** One line per request once it is answered (and its metrics): never the query string, headers or a capability. */
export function requestLog(services: Services, router: ApiRouter | undefined) {
  return (req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    const id = randomUUID();
    res.set('X-Request-Id', id);
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      services.log.info(
        {
          reqId: id,
          method: req.method,
          // The whole path (inside a router `req.path` is only the part below its mount point).
          path: loggablePath(`${req.baseUrl}${req.path}`),
          status: res.statusCode,
          ms,
          org: res.locals.auth?.orgId,
        },
        'request',
      );
      observeHttp(req.method, routeOf(req, router), res.statusCode, ms / 1000);
    });
    next();
  };
}
