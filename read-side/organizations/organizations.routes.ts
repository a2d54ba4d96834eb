import { Organization } from '../../domain/organizations/organizations.response.ts';
import { queryRoutes } from '../../platform/http/query-routes.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { organizationJson } from './organizations.queries.ts';

export function organizationQueryRoutes(api: ApiRouter, services: Services) {
  const organization = queryRoutes(api, { tag: 'Organization', name: 'Organization' });
  organization.get(
    '/organization',
    {
      summary: "The key's organization and its plan: price and limits",
      responses: { 200: Organization },
    },
    (req) => organizationJson(services.db, req.auth.orgId),
  );
}
