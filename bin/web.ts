import { fileURLToPath } from 'node:url';
import type express from 'express';
import type { Authenticate } from '../platform/auth/auth-context.ts';
import { mountApiReference } from '../platform/http/api-reference.ts';
import { createHttpApp, type HttpAppOptions } from '../platform/http/app.ts';
import { HttpDrain } from '../platform/http/drain.ts';
import { publicRateLimit } from '../platform/http/rate-limit-middleware.ts';
import { ApiRouter } from '../platform/http/router.ts';
import type { Services } from '../platform/services.ts';
import { mountHandlers, mountOperations, registerRoutes } from './composition.ts';
import { apiDocument } from './openapi-document.ts';

/** The dashboard's committed build (`npm run build:dashboard`), served at `/` by processes with the API. */
const DASHBOARD_DIR = fileURLToPath(new URL('../dashboard/dist', import.meta.url));

/**
 * The HTTP side of a Postline: the API with its reference and the dashboard (`api`), or only /healthz, /readyz and
 * /metrics, as a process of other roles needs for probes and scraping; `mount` adds handlers outside /v1. The
 * service loads this module only for a process that serves HTTP.
 */
export function createWebApp(
  services: Services,
  o: {
    api: boolean;
    authenticate: Authenticate;
    ready: HttpAppOptions['ready'];
    mount?: (app: express.Express, services: Services) => void;
  },
): { app: express.Express; drain: HttpDrain } {
  const router = o.api ? new ApiRouter() : undefined;
  if (router) registerRoutes(router, services);
  const drain = new HttpDrain();
  const app = createHttpApp({
    services,
    router,
    authenticate: o.authenticate,
    ready: o.ready,
    mount: (a) => {
      if (router) {
        mountApiReference(a, () => apiDocument(router), publicRateLimit(services));
        mountHandlers(a, services);
      } else mountOperations(a, services);
      o.mount?.(a, services);
    },
    drain,
    dashboardDir: router ? DASHBOARD_DIR : undefined,
  });
  return { app, drain };
}
