import type { Request, Response } from 'express';
import { match } from 'path-to-regexp';
import type { AuthContext } from '../auth/auth-context.ts';
import { AppError } from '../errors.ts';
import type { Position } from '../eventstore/types.ts';
import { type IdempotentRun, requestHash } from '../idempotency/idempotency.ts';
import type { Services } from '../services.ts';
import { applyRateLimit } from './rate-limit-middleware.ts';
import type { RouteSchema } from './route-schema.ts';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface ApiRequest {
  auth: AuthContext;
  body: any;
  params: Record<string, string>;
  query: Record<string, unknown>;
  header(name: string): string | undefined;
  /**
   * Under an Idempotency-Key: the ids the handler must give what it creates (as many as the route's `newIds`
   * made), and whether an earlier attempt may have committed some of them, in which case it answers with
   * those instead of creating them again.
   */
  idempotency?: IdempotentRun;
}

export interface Reply {
  status: number;
  body: unknown;
}

export interface RouteOptions {
  /** `send`: sending_access keys may call it too. Default: full_access only. */
  access?: 'send' | 'full';
  /** An extra, stricter per-organization limit for this route (requests per second). */
  rateLimit?: number;
  /**
   * Honour the Idempotency-Key header. `newIds`: the ids of what the request will create (for `at`, the
   * request's time), recorded with the key before the handler runs.
   */
  idempotent?: { newIds: (body: unknown, at: number) => string[] };
  /**
   * The route's parameters, body, responses and extra error codes: the OpenAPI document is generated from it
   * (`openapi.ts`), and `test/integration/openapi.test.ts` fails for a route without one.
   */
  schema?: RouteSchema;
}

export interface Route {
  method: Method;
  path: string;
  options: RouteOptions;
  handler: (req: ApiRequest) => Promise<Reply>;
  matches: (path: string) => boolean;
}

export const ok = (body: unknown): Reply => ({ status: 200, body });
export const created = (body: unknown): Reply => ({ status: 201, body });

/**
 * Under an Idempotency-Key whose earlier attempt never finished: the resource that attempt created under the
 * chosen id (its stream `stream(id)` exists), so the route answers with it instead of creating another.
 */
export async function createdEarlier(
  services: Pick<Services, 'store'>,
  req: ApiRequest,
  stream: (id: string) => string,
): Promise<{ id: string; position: Position } | undefined> {
  const id = req.idempotency?.ids[0];
  if (!id || !req.idempotency?.resumed) return undefined;
  const [first] = await services.store.readStream(stream(id));
  return first && { id, position: first.position };
}

/**
 * Read-your-writes after a committed write. Whatever stops the wait (its deadline, the database), the answer is
 * 503 `projection_timeout`, which says the write was saved, carrying `committed` (the ids it created): a client
 * never takes it for a failure and sends again.
 */
export function waitAfterCommit(
  services: Pick<Services, 'readYourWrites' | 'log'>,
  projections: string[],
  position: Position | undefined,
  committed: Record<string, unknown>,
): Promise<void> {
  return readableAfterCommit(services, services.readYourWrites.waitFor(projections, position), committed);
}

/** `waitAfterCommit` for a wait already under way (`waiting`, from `readYourWrites.waitFor`). */
export async function readableAfterCommit(
  services: Pick<Services, 'log'>,
  waiting: Promise<void>,
  committed: Record<string, unknown>,
): Promise<void> {
  try {
    await waiting;
  } catch (error) {
    const timedOut = error instanceof AppError && error.code === 'projection_timeout';
    if (!timedOut)
      services.log.warn({ err: error }, 'waiting for read models after a committed write failed');
    throw new AppError(
      'projection_timeout',
      'The change was saved but is not readable yet; retry the read shortly.',
      { 'Retry-After': '1' },
      committed,
    );
  }
}

/** The routes of the /v1 API. Each resource registers its own in `write-side/<x>/routes.ts` or `read-side/<x>/routes.ts`. */
export class ApiRouter {
  readonly routes: Route[] = [];

  add(method: Method, path: string, handler: Route['handler'], options: RouteOptions = {}) {
    const m = match(path);
    this.routes.push({ method, path, options, handler, matches: (p) => m(p) !== false });
  }
  get(path: string, handler: Route['handler'], options?: RouteOptions) {
    this.add('GET', path, handler, options);
  }
  post(path: string, handler: Route['handler'], options?: RouteOptions) {
    this.add('POST', path, handler, options);
  }
  /** Idempotent by its nature: putting what is there already changes nothing. */
  put(path: string, handler: Route['handler'], options?: RouteOptions) {
    this.add('PUT', path, handler, options);
  }
  patch(path: string, handler: Route['handler'], options?: RouteOptions) {
    this.add('PATCH', path, handler, options);
  }
  delete(path: string, handler: Route['handler'], options?: RouteOptions) {
    this.add('DELETE', path, handler, options);
  }

  /** Wraps a route for express: permission, route rate limit, idempotency, then the handler. */
  static toExpress(route: Route, services: Services) {
    return async (req: Request, res: Response) => {
      await res.locals.rateLimit; // counted in `bearer` while the body was read
      const auth = res.locals.auth as AuthContext;
      if (route.options.access !== 'send' && auth.permission !== 'full_access') {
        throw new AppError(
          'insufficient_permission',
          'This API key may only send email (permission sending_access).',
        );
      }
      if (route.options.rateLimit)
        await applyRateLimit(services, res, auth, route.options.rateLimit, `${route.method} ${route.path}`);
      const apiReq: ApiRequest = {
        auth,
        body: req.body,
        params: req.params as Record<string, string>,
        query: req.query as Record<string, unknown>,
        header: (name) => req.get(name),
      };
      const key = req.get('idempotency-key');
      let reply: Reply & { replayed?: boolean };
      const idempotent = route.options.idempotent;
      if (idempotent && key !== undefined) {
        const hash = requestHash(route.method, req.path, req.body);
        const now = () => services.clock.now();
        reply = await services.idempotency.run(
          auth,
          key,
          hash,
          now,
          (claim) => route.handler({ ...apiReq, idempotency: claim }),
          {
            leaseMs: services.config.IDEMPOTENCY_LEASE_MS,
            newIds: () => idempotent.newIds(req.body, now().getTime()),
          },
        );
        if (reply.replayed) res.set('Idempotent-Replayed', 'true');
      } else {
        reply = await route.handler(apiReq);
      }
      res.status(reply.status).json(reply.body);
    };
  }
}
