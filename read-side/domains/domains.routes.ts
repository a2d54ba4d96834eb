import { notFound } from '../../platform/errors.ts';
import { listQuery, parsePage } from '../../platform/http/pagination.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { findDomainById, listDomains, toApiDomain } from './domains.queries.ts';
import { Domain, DomainList } from './domains.response.ts';

const query = listQuery();

export function domainQueryRoutes(api: ApiRouter, services: Services) {
  api.get(
    '/domains',
    async (req) => ok(await listDomains(services.db, req.auth, parsePage(req.query, query))),
    {
      schema: { tag: 'Domains', summary: 'List domains', query, responses: { 200: DomainList } },
    },
  );

  api.get(
    '/domains/:domain_id',
    async (req) => {
      const row = await findDomainById(services.db, req.auth, req.params.domain_id);
      if (!row) throw notFound('Domain', req.params.domain_id);
      return ok(toApiDomain(row));
    },
    { schema: { tag: 'Domains', summary: 'Get a domain', responses: { 200: Domain } } },
  );
}
