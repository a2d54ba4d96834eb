import { z } from 'zod';
import { listQuery, parsePage } from '../../platform/http/pagination.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { listSuppressions } from './suppressions.queries.ts';
import { SuppressionList } from './suppressions.response.ts';

const query = listQuery({ reason: z.enum(['hard_bounce', 'complaint', 'manual']).optional() });

export function suppressionQueryRoutes(api: ApiRouter, services: Services) {
  api.get(
    '/suppressions',
    async (req) => ok(await listSuppressions(services.db, req.auth, parsePage(req.query, query))),
    {
      schema: {
        tag: 'Suppressions',
        summary: 'List suppressions',
        query,
        responses: { 200: SuppressionList },
      },
    },
  );
}
