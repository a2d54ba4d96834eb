import { notFound } from '../../platform/errors.ts';
import { parsePage } from '../../platform/http/pagination.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { getTemplate, listTemplates, listTemplateVersions } from './templates.queries.ts';

export function templateQueryRoutes(api: ApiRouter, services: Services) {
  api.get('/templates', async (req) => ok(await listTemplates(services.db, req.auth, parsePage(req.query))));

  api.get('/templates/:template_id', async (req) => {
    const template = await getTemplate(services.db, req.auth, req.params.template_id);
    if (!template) throw notFound('Template', req.params.template_id);
    return ok(template);
  });

  api.get('/templates/:template_id/versions', async (req) => {
    const page = parsePage(req.query);
    const versions = await listTemplateVersions(services.db, req.auth, req.params.template_id, page);
    if (!versions) throw notFound('Template', req.params.template_id);
    return ok(versions);
  });
}
