import { ContactImport } from '../../domain/contact-imports/contact-imports.response.ts';
import { queryRoutes } from '../../platform/http/query-routes.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { findContactImport } from './contact-imports.queries.ts';

export function contactImportQueryRoutes(api: ApiRouter, services: Services) {
  const imports = queryRoutes(api, { tag: 'Contacts', name: 'Contact import' });
  // An import is read under the audience it fills: another audience's path does not find it.
  imports.get(
    '/audiences/:audience_id/contacts/import/:import_id',
    { summary: 'Get a contact import and its progress', responses: { 200: ContactImport } },
    async (req) => {
      const job = await findContactImport(services.db, req.auth, req.params.import_id);
      return job?.audience_id === req.params.audience_id ? job : null;
    },
  );
}
