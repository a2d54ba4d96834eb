import { listQuery, parsePage } from '../../platform/http/pagination.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { listApiKeys } from './api-keys.queries.ts';
import { ApiKeyList } from './api-keys.response.ts';

const query = listQuery();

export function apiKeyQueryRoutes(api: ApiRouter, services: Services) {
  api.get(
    '/api-keys',
    async (req) => ok(await listApiKeys(services.db, req.auth, parsePage(req.query, query))),
    { schema: { tag: 'API keys', summary: 'List API keys', query, responses: { 200: ApiKeyList } } },
  );
}
