import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { AppError } from '../errors.ts';
import type { Services } from '../services.ts';
import type { Authenticate } from './auth-context.ts';
import { applyRateLimit } from './rate-limit-middleware.ts';
import { ApiRouter } from './router.ts';

/** Bodies with attachments (40 MB of files, base64) may be large; everything else stays small. */
// Matched against the path inside the /v1 router (req.path there is `/emails`).
const LARGE_BODY_ROUTES = /^(\/v1)?\/emails(\/batch)?$/;
const LARGE_BODY_LIMIT = '60mb';
const BODY_LIMIT = '2mb'; // a template's html and text parts may be 512 KB each

export interface HttpAppOptions {
  services: Services;
  authenticate: Authenticate;
  router: ApiRouter;
  /** Readiness: the stores answer and projections run. */
  ready: () => Promise<boolean>;
  /** Extra, non-/v1 handlers mounted first (tracking pixel, downloads, admin). */
  mount?: (app: express.Express) => void;
}

function requestLog(services: Services) {
  return (req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    const id = randomUUID();
    res.set('X-Request-Id', id);
    res.on('finish', () => {
      services.log.info(
        {
          reqId: id,
          method: req.method,
          path: req.path, // never the query string or headers: they may carry secrets
          status: res.statusCode,
          ms: Number(process.hrtime.bigint() - started) / 1e6,
          org: res.locals.auth?.orgId,
        },
        'request',
      );
    });
    next();
  };
}

/** `\u0000` escaped in a JSON string (an odd run of backslashes before `u0000`). */
const NUL_ESCAPE = /(?<!\\)(?:\\\\)*\\u0000/;

/** PostgreSQL's text and jsonb cannot hold U+0000: refused here, so that nothing accepted fails to store later. */
function refuseNul(_req: unknown, _res: unknown, body: Buffer) {
  if (body.includes('\\u0000') && NUL_ESCAPE.test(body.toString()))
    throw new AppError('validation_error', 'Strings must not contain the NUL character (\\u0000).');
}

const jsonSmall = express.json({ limit: BODY_LIMIT, type: () => true, verify: refuseNul });
const jsonLarge = express.json({ limit: LARGE_BODY_LIMIT, type: () => true, verify: refuseNul });

function parseBody(req: Request, res: Response, next: NextFunction) {
  const hasBody = Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
  if (!hasBody || req.method === 'GET' || req.method === 'DELETE') {
    req.body = undefined;
    return next();
  }
  if (!req.is('application/json')) {
    return next(
      new AppError(
        'unsupported_content_type',
        'Request bodies must be JSON (Content-Type: application/json).',
      ),
    );
  }
  (LARGE_BODY_ROUTES.test(req.path) ? jsonLarge : jsonSmall)(req, res, next);
}

function bearer(services: Services, authenticate: Authenticate) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.get('authorization');
    if (!header)
      throw new AppError('missing_api_key', 'Missing API key: send Authorization: Bearer <API_KEY>.');
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const auth = m ? await authenticate(m[1]) : null;
    if (!auth) throw new AppError('invalid_api_key', 'The API key is invalid or was deleted.');
    res.locals.auth = auth;
    // The counter's round trip (Redis or the database) overlaps reading and parsing the body. The route waits
    // for it before doing anything (ApiRouter.toExpress), and the error handler before answering: a refusal wins.
    const decision = applyRateLimit(services, res, auth, services.config.RATE_LIMIT_RPS, 'all');
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
    else {
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
  app.use(requestLog(services));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const ready = await options.ready().catch(() => false);
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready' });
  });
  options.mount?.(app);

  const v1 = express.Router();
  v1.use(bearer(services, options.authenticate));
  v1.use(parseBody);
  for (const route of router.routes) {
    const method = route.method.toLowerCase() as 'get' | 'post' | 'patch' | 'delete';
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
  app.use((req) => {
    throw new AppError('route_not_found', `No route ${req.method} ${req.path}; the API lives under /v1.`);
  });
  app.use(errorHandler(services));
  return app;
}
