import { ApiKeyList } from '../../domain/api-keys/api-keys.response.ts';
import { queryRoutes } from '../../platform/http/query-routes.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { listApiKeys } from './api-keys.queries.ts';

export function apiKeyQueryRoutes(api: ApiRouter, services: Services) {
  const apiKeys = queryRoutes(api, { tag: 'API keys', name: 'API key' });
  apiKeys.list('/api-keys', { summary: 'List API keys', responses: { 200: ApiKeyList } }, (req, page) =>
    listApiKeys(services.db, req.auth, page),
  );
}
