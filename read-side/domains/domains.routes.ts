import { notFound } from '../../platform/errors.ts';
import { parsePage } from '../../platform/http/pagination.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { findDomainById, listDomains, toApiDomain } from './domains.queries.ts';

export function domainQueryRoutes(api: ApiRouter, services: Services) {
  api.get('/domains', async (req) => ok(await listDomains(services.db, req.auth, parsePage(req.query))));

  api.get('/domains/:domain_id', async (req) => {
    const row = await findDomainById(services.db, req.auth, req.params.domain_id);
    if (!row) throw notFound('Domain', req.params.domain_id);
    return ok(toApiDomain(row));
  });
}
