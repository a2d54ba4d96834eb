import { DmarcReportList } from '../../domain/dmarc/dmarc-reports.response.ts';
import { queryRoutes } from '../../platform/http/query-routes.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { listDmarcReports } from './dmarc-reports.queries.ts';

export function dmarcReportQueryRoutes(api: ApiRouter, services: Services) {
  const domains = queryRoutes(api, { tag: 'Domains', name: 'Domain' });
  domains.get(
    '/domains/:domain_id/dmarc-reports',
    {
      summary: "List a domain's DMARC aggregate reports",
      description:
        'The aggregate reports received at the `rua` address of the domain (docs/deliverability.md, "DMARC reports"), per reporter and day, with the sending addresses they name.',
      responses: { 200: DmarcReportList },
    },
    (req) =>
      listDmarcReports(services.db, req.auth, req.params.domain_id, services.config.POSTLINE_OUTBOUND_IPS),
  );
}
