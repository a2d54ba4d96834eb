import { z } from 'zod';
import { SuppressionList } from '../../domain/suppressions/suppressions.response.ts';
import { listQuery } from '../../platform/http/pagination.ts';
import { queryRoutes } from '../../platform/http/query-routes.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { listSuppressions } from './suppressions.queries.ts';

const query = listQuery({ reason: z.enum(['hard_bounce', 'complaint', 'manual']).optional() });

export function suppressionQueryRoutes(api: ApiRouter, services: Services) {
  const suppressions = queryRoutes(api, { tag: 'Suppressions', name: 'Suppression' });
  suppressions.list(
    '/suppressions',
    { summary: 'List suppressions', query, responses: { 200: SuppressionList } },
    (req, page) => listSuppressions(services.db, req.auth, page),
  );
}
