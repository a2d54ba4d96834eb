import { notFound } from '../../platform/errors.ts';
import { listQuery, parsePage } from '../../platform/http/pagination.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { findAudienceWithCount, listAudiences } from './audiences.queries.ts';
import { AUDIENCE_PATHS, AudienceList, AudienceWithCount, aliased } from './audiences.response.ts';

const query = listQuery();

export function audienceQueryRoutes(api: ApiRouter, services: Services) {
  for (const base of AUDIENCE_PATHS) {
    api.get(
      base,
      async (req) => ok(await listAudiences(services.db, req.auth, parsePage(req.query, query))),
      {
        schema: {
          tag: 'Audiences',
          summary: aliased(base, 'List audiences'),
          query,
          responses: { 200: AudienceList },
        },
      },
    );
    api.get(
      `${base}/:audience_id`,
      async (req) => {
        const audience = await findAudienceWithCount(services.db, req.auth, req.params.audience_id);
        if (!audience) throw notFound('Audience', req.params.audience_id);
        return ok(audience);
      },
      {
        schema: {
          tag: 'Audiences',
          summary: aliased(base, 'Get an audience'),
          responses: { 200: AudienceWithCount },
        },
      },
    );
  }
}
