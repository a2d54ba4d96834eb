import { Template, TemplateList, TemplateVersionList } from '../../domain/templates/templates.response.ts';
import { queryRoutes } from '../../platform/http/query-routes.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { getTemplate, listTemplates, listTemplateVersions } from './templates.queries.ts';

export function templateQueryRoutes(api: ApiRouter, services: Services) {
  const templates = queryRoutes(api, { tag: 'Templates', name: 'Template' });
  templates.list('/templates', { summary: 'List templates', responses: { 200: TemplateList } }, (req, page) =>
    listTemplates(services.db, req.auth, page),
  );
  templates.get(
    '/templates/:template_id',
    { summary: 'Get a template with its draft and published versions', responses: { 200: Template } },
    (req) => getTemplate(services.db, req.auth, req.params.template_id),
  );
  templates.list(
    '/templates/:template_id/versions',
    { summary: 'List the versions of a template', responses: { 200: TemplateVersionList } },
    (req, page) => listTemplateVersions(services.db, req.auth, req.params.template_id, page),
  );
}
