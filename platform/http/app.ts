import express, { type NextFunction, type Request, type Response } from 'express';
import { match } from 'path-to-regexp';
import type { Authenticate } from '../auth/auth-context.ts';
import { AuthFailureLimit } from '../auth/auth-failure-limit.ts';
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import { AppError } from '../errors.ts';
import { WrongExpectedRevisionError } from '../eventstore/types.ts';
import type { Services } from '../services.ts';
import { findUnstorableText, refuseUnstorableText } from '../unstorable-text.ts';
import { mountDashboard } from './dashboard.ts';
import type { HttpDrain } from './drain.ts';
import { organizationRateKey } from './rate-limit.ts';
import { limitRequest, publicRateKey } from './rate-limit-middleware.ts';
import { requestLog } from './request-log.ts';
import { ApiRouter } from './router.ts';

/**
 * Routes whose bodies are not the small JSON of the others, matched against the path inside the /v1 router
 * (`/emails`) as the router matches its routes (path-to-regexp's defaults: any case, a trailing slash or not).
 */
const routeMatcher = (...paths: string[]) => {
  const matchers = paths.map((p) => match(p, { decode: false }));
  return (path: string) => matchers.some((m) => m(path) !== false);
};
/** Bodies with attachments (40 MB of files, base64) may be large; everything else stays small. */
const isLargeBodyRoute = routeMatcher('/emails', '/emails/batch');
const LARGE_BODY_LIMIT = '60mb';
/** A contact import's body is a CSV file, handed to its route as the request stream (it goes to the blob store). */
const isCsvBodyRoute = routeMatcher('/audiences/:audience_id/contacts/import');
const BODY_LIMIT = '2mb'; // a template's html and text parts may be 512 KB each

export interface HttpAppOptions {
  services: Services;
  authenticate: Authenticate;
  /** The API under /v1; a process without the `api` role has none and serves only what `mount` adds. */
  router?: ApiRouter;
  /** Readiness: the stores answer, projections run, no consumer of the log is stuck; `detail` says what is not. */
  ready: () => Promise<{ ready: boolean; detail?: Record<string, unknown> }>;
  /** Extra, non-/v1 handlers mounted first (tracking pixel, downloads, admin). */
  mount?: (app: express.Express) => void;
  /** Graceful shutdown: requests in flight are tracked, new ones turned away once it drains. */
  drain?: HttpDrain;
  /** The built dashboard (`dashboard/dist`), served at `/` beside the API; only with a router. */
  dashboardDir?: string;
}

/**
 * Every request, before any handler: a path that is not percent-encoded UTF-8 is a 400, one that decodes to
 * text the stores cannot hold names nothing (404), and so does no query parameter or header hold such text
 * (422 naming it). Bodies are held to the same rule once parsed (`parseBody`).
 */
function refuseUnstorableRequest(req: Request, _res: Response, next: NextFunction) {
  let path: string;
  try {
    path = decodeURIComponent(req.path);
  } catch {
    throw new AppError('malformed_request', 'The path is not valid percent-encoded UTF-8.');
  }
  if (findUnstorableText(path) !== undefined)
    throw new AppError('route_not_found', `Nothing at ${encodeURI(path.toWellFormed())}.`);
  refuseUnstorableText(req.query, 'query');
  refuseUnstorableText(req.headers, 'header');
  next();
}

const jsonSmall = express.json({ limit: BODY_LIMIT, type: () => true });
const jsonLarge = express.json({ limit: LARGE_BODY_LIMIT, type: () => true });

function parseBody(services: Services) {
  return (req: Request, res: Response, next: NextFunction) => parseBodyWith(services, req, res, next);
}

function parseBodyWith(services: Services, req: Request, res: Response, next: NextFunction) {
  const hasBody = Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
  if (!hasBody || req.method === 'GET' || req.method === 'DELETE') {
    req.body = undefined;
    return next();
  }
  if (isCsvBodyRoute(req.path) && req.method === 'POST') return csvBody(services, req, next);
  if (!req.is('application/json')) {
    return next(
      new AppError(
        'unsupported_content_type',
        'Request bodies must be JSON (Content-Type: application/json).',
      ),
    );
  }
  (isLargeBodyRoute(req.path) ? jsonLarge : jsonSmall)(req, res, (error?: unknown) => {
    if (error) return next(error);
    try {
      refuseUnstorableText(req.body, '');
    } catch (refused) {
      return next(refused);
    }
    next();
  });
}

/** A CSV body: the right type, and a declared length within the limit (the route counts what it reads too). */
function csvBody(services: Services, req: Request, next: NextFunction) {
  if (!req.is('text/csv'))
    return next(
      new AppError('unsupported_content_type', 'A contact import takes a CSV file (Content-Type: text/csv).'),
    );
  const charset = /;\s*charset="?([^";\s]+)/i.exec(req.get('content-type') ?? '')?.[1].toLowerCase();
  if (charset && charset !== 'utf-8' && charset !== 'utf8' && charset !== 'us-ascii')
    return next(
      new AppError('unsupported_content_type', 'A contact import file must be UTF-8 (charset=utf-8).'),
    );
  const limit = services.config.CONTACT_IMPORT_MAX_BYTES;
  if (Number(req.get('content-length') ?? 0) > limit)
    return next(new AppError('body_too_large', `The file is larger than the limit of ${limit} bytes.`));
  req.body = req;
  next();
}

/**
 * Behind a reverse proxy every request comes from the proxy's address unless TRUST_PROXY names it: then all its
 * clients share one address, and one guesser's failed authentications refuse every unknown key behind it, and
 * requests without a key share one limit. Said once, at the first request that shows a proxy.
 */
function warnOfUntrustedProxy(services: Services) {
  let warned = services.config.TRUST_PROXY.length > 0;
  return (req: Request, _res: Response, next: NextFunction) => {
    if (!warned && req.get('x-forwarded-for') !== undefined) {
      warned = true;
      services.log.warn(
        { peer: req.socket.remoteAddress },
        'A request carries X-Forwarded-For but TRUST_PROXY is not set: every client is taken to be the proxy, whose address they share for the limits per client address. Set TRUST_PROXY to your proxies (docs/configuration.md).',
      );
    }
    next();
  };
}

function bearer(services: Services, authenticate: Authenticate) {
  const failures = new AuthFailureLimit(
    services.rateLimiter,
    services.config.AUTH_FAILURES_PER_MINUTE,
    services.clock,
  );
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.get('authorization');
    if (!header) {
      // It guesses no key: counted as a request without a key (per address, as tracking links), not as a failure.
      await limitRequest(services, res, publicRateKey(req), services.config.PUBLIC_RATE_LIMIT_RPS);
      throw new AppError('missing_api_key', 'Missing API key: send Authorization: Bearer <API_KEY>.');
    }
    const key = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
    const auth = await failures.authenticate(req.ip ?? 'unknown', key, authenticate);
    res.locals.auth = auth;
    // The counter's round trip (Redis or the database) overlaps reading and parsing the body. The route waits
    // for it before doing anything (ApiRouter.toExpress), and the error handler before answering: a refusal wins.
    const decision = limitRequest(
      services,
      res,
      organizationRateKey(auth.orgId),
      services.config.RATE_LIMIT_RPS,
    );
    decision.catch(() => {});
    res.locals.rateLimit = decision;
    next();
  };
}

/** Maps every error to `{error:{type,message,code}}`: body-parser failures, unknown routes, bugs. Never HTML. */
function errorHandler(services: Services) {
  return async (error: any, _req: Request, res: Response, _next: NextFunction) => {
    // The rate limit's refusal (or failure) comes before whatever else went wrong meanwhile.
    error =
      (await (res.locals.rateLimit as Promise<void> | undefined)?.then(
        () => undefined,
        (refused: unknown) => refused,
      )) ?? error;
    let e: AppError;
    if (error instanceof AppError) e = error;
    else if (error?.type === 'entity.parse.failed')
      e = new AppError('malformed_json', 'The request body is not valid JSON.');
    else if (error?.type === 'entity.too.large')
      e = new AppError('body_too_large', `The request body is larger than the limit.`);
    else if (error?.type === 'encoding.unsupported' || error?.type === 'charset.unsupported')
      e = new AppError('unsupported_content_type', 'Request bodies must be UTF-8 JSON.');
    else if (error?.status >= 400 && error?.status < 500 && error?.expose)
      e = new AppError('malformed_json', 'The request body could not be read.');
    else if (error instanceof URIError)
      e = new AppError('malformed_request', 'The path is not valid percent-encoded UTF-8.');
    else if (error instanceof WrongExpectedRevisionError)
      // Other requests kept changing the same resource while this one tried again (handleCommand's retries).
      e = new AppError(
        'concurrent_modification',
        'Another request changed the same resource at the same moment; send the request again.',
      );
    else if (isDatabaseUnavailable(error)) {
      // The database is away (restarting, unreachable, connections lost): the request may be sent again.
      services.log.warn({ err: error }, 'database unavailable');
      e = new AppError('database_unavailable', 'The database is unavailable; retry shortly.', {
        'Retry-After': '1',
      });
    } else {
      services.log.error({ err: error }, 'unhandled error');
      e = new AppError('internal_error', 'Something went wrong on our side; the request was not completed.');
    }
    if (res.headersSent) return;
    res.status(e.status).set(e.headers).json(e.toJSON());
  };
}

export function createHttpApp(options: HttpAppOptions): express.Express {
  const { services, router } = options;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  // The client's address (for the limit on failed authentications): the peer's, or X-Forwarded-For's as
  // far as it was written by the proxies TRUST_PROXY names.
  app.set('trust proxy', services.config.TRUST_PROXY.length > 0 ? services.config.TRUST_PROXY : false);
  app.use(requestLog(services, router));
  app.use(warnOfUntrustedProxy(services));
  if (options.drain) app.use(options.drain.middleware);
  app.use(refuseUnstorableRequest);

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const { ready, detail } = await options.ready().catch(() => ({ ready: false, detail: undefined }));
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready', ...detail });
  });
  options.mount?.(app);

  if (!router) {
    app.use((req) => {
      throw new AppError(
        'route_not_found',
        `No route ${req.method} ${req.path}; this process serves no API.`,
      );
    });
    app.use(errorHandler(services));
    return app;
  }
  const v1 = express.Router();
  v1.use(bearer(services, options.authenticate));
  v1.use(parseBody(services));
  for (const route of router.routes) {
    const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
    v1[method](route.path, ApiRouter.toExpress(route, services));
  }
  v1.use((req, res) => {
    const allowed = [...new Set(router.routes.filter((r) => r.matches(req.path)).map((r) => r.method))];
    if (allowed.length) {
      res.set('Allow', allowed.join(', '));
      throw new AppError(
        'method_not_allowed',
        `${req.method} is not allowed on ${req.baseUrl}${req.path}; use ${allowed.join(', ')}.`,
      );
    }
    throw new AppError('route_not_found', `No route ${req.method} ${req.baseUrl}${req.path}.`);
  });
  app.use('/v1', v1);
  // After every other handler, so it never takes their paths; what is not a page falls through to the JSON 404.
  if (options.dashboardDir && !mountDashboard(app, options.dashboardDir))
    services.log.warn({ dir: options.dashboardDir }, 'dashboard bundle missing: `/` serves no dashboard');
  app.use((req) => {
    throw new AppError('route_not_found', `No route ${req.method} ${req.path}; the API lives under /v1.`);
  });
  app.use(errorHandler(services));
  return app;
}
