import {
  AUDIENCE_PATHS,
  AudienceList,
  AudienceWithCount,
  aliased,
} from '../../domain/audiences/audiences.response.ts';
import { queryRoutes } from '../../platform/http/query-routes.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { findAudienceWithCount, listAudiences } from './audiences.queries.ts';

export function audienceQueryRoutes(api: ApiRouter, services: Services) {
  const audiences = queryRoutes(api, { tag: 'Audiences', name: 'Audience' });
  for (const base of AUDIENCE_PATHS) {
    audiences.list(
      base,
      { summary: aliased(base, 'List audiences'), responses: { 200: AudienceList } },
      (req, page) => listAudiences(services.db, req.auth, page),
    );
    audiences.get(
      `${base}/:audience_id`,
      { summary: aliased(base, 'Get an audience'), responses: { 200: AudienceWithCount } },
      (req) => findAudienceWithCount(services.db, req.auth, req.params.audience_id),
    );
  }
}
