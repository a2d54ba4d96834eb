import { Domain, DomainList } from '../../domain/domains/domains.response.ts';
import { queryRoutes } from '../../platform/http/query-routes.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { findApiDomain, listDomains } from './domains.queries.ts';

export function domainQueryRoutes(api: ApiRouter, services: Services) {
  const domains = queryRoutes(api, { tag: 'Domains', name: 'Domain' });
  domains.list('/domains', { summary: 'List domains', responses: { 200: DomainList } }, (req, page) =>
    listDomains(services.db, req.auth, page),
  );
  domains.get('/domains/:domain_id', { summary: 'Get a domain', responses: { 200: Domain } }, (req) =>
    findApiDomain(services.db, req.auth, req.params.domain_id),
  );
}
