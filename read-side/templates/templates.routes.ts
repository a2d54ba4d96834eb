import { notFound } from '../../platform/errors.ts';
import { listQuery, parsePage } from '../../platform/http/pagination.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { getTemplate, listTemplates, listTemplateVersions } from './templates.queries.ts';
import { Template, TemplateList, TemplateVersionList } from './templates.response.ts';

const query = listQuery();

export function templateQueryRoutes(api: ApiRouter, services: Services) {
  api.get(
    '/templates',
    async (req) => ok(await listTemplates(services.db, req.auth, parsePage(req.query, query))),
    { schema: { tag: 'Templates', summary: 'List templates', query, responses: { 200: TemplateList } } },
  );

  api.get(
    '/templates/:template_id',
    async (req) => {
      const template = await getTemplate(services.db, req.auth, req.params.template_id);
      if (!template) throw notFound('Template', req.params.template_id);
      return ok(template);
    },
    {
      schema: {
        tag: 'Templates',
        summary: 'Get a template with its draft and published versions',
        responses: { 200: Template },
      },
    },
  );

  api.get(
    '/templates/:template_id/versions',
    async (req) => {
      const page = parsePage(req.query, query);
      const versions = await listTemplateVersions(services.db, req.auth, req.params.template_id, page);
      if (!versions) throw notFound('Template', req.params.template_id);
      return ok(versions);
    },
    {
      schema: {
        tag: 'Templates',
        summary: 'List the versions of a template',
        query,
        responses: { 200: TemplateVersionList },
      },
    },
  );
}
