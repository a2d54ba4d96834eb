import { loadConfig } from '../platform/config.ts';
import { openApiDocument } from '../platform/http/openapi.ts';
import { ApiRouter } from '../platform/http/router.ts';
import type { Services } from '../platform/services.ts';
import { WEBHOOK_PAYLOADS } from '../processes/webhooks/public-events.v1.schema.ts';
import { registerRoutes } from './composition.ts';

/** The OpenAPI document of the API this router serves, with the public webhook payloads. */
export function apiDocument(router: ApiRouter) {
  return openApiDocument(router.routes, WEBHOOK_PAYLOADS);
}

/**
 * The document without a running service (`postline openapi`): registering routes reads only the configuration
 * (a route's own rate limit); no handler runs here, so nothing else of `services` is touched.
 */
export function standaloneApiDocument() {
  const router = new ApiRouter();
  registerRoutes(router, { config: loadConfig({}) } as Services);
  return apiDocument(router);
}
