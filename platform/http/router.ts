import type { Request, Response } from 'express';
import { match } from 'path-to-regexp';
import { AppError } from '../errors.ts';
import type { Services } from '../services.ts';
import type { AuthContext } from './auth-context.ts';
import { requestHash, withIdempotency } from './idempotency.ts';
import { applyRateLimit } from './rate-limit-middleware.ts';

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export interface ApiRequest {
  auth: AuthContext;
  body: any;
  params: Record<string, string>;
  query: Record<string, unknown>;
  header(name: string): string | undefined;
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
  /** Honour the Idempotency-Key header. */
  idempotent?: boolean;
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

/** The routes of the /v1 API. Each resource registers its own in `write-side/<x>/routes.ts` or `read-side/<x>/routes.ts`. */
export class ApiRouter {
  readonly routes: Route[] = [];

  #add(method: Method, path: string, handler: Route['handler'], options: RouteOptions = {}) {
    const m = match(path);
    this.routes.push({ method, path, options, handler, matches: (p) => m(p) !== false });
  }
  get(path: string, handler: Route['handler'], options?: RouteOptions) {
    this.#add('GET', path, handler, options);
  }
  post(path: string, handler: Route['handler'], options?: RouteOptions) {
    this.#add('POST', path, handler, options);
  }
  patch(path: string, handler: Route['handler'], options?: RouteOptions) {
    this.#add('PATCH', path, handler, options);
  }
  delete(path: string, handler: Route['handler'], options?: RouteOptions) {
    this.#add('DELETE', path, handler, options);
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
      if (route.options.idempotent && key !== undefined) {
        const hash = requestHash(route.method, req.path, req.body);
        reply = await withIdempotency(
          services.store,
          auth,
          key,
          hash,
          () => services.clock.now(),
          () => route.handler(apiReq),
        );
        if (reply.replayed) res.set('Idempotent-Replayed', 'true');
      } else {
        reply = await route.handler(apiReq);
      }
      res.status(reply.status).json(reply.body);
    };
  }
}
