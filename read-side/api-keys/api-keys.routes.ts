import { parsePage } from '../../platform/http/pagination.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { listApiKeys } from './api-keys.queries.ts';

export function apiKeyQueryRoutes(api: ApiRouter, services: Services) {
  api.get('/api-keys', async (req) => ok(await listApiKeys(services.db, req.auth, parsePage(req.query))));
}
