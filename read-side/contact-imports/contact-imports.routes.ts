import { notFound } from '../../platform/errors.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { findContactImport } from './contact-imports.queries.ts';
import { ContactImport } from './contact-imports.response.ts';

export function contactImportQueryRoutes(api: ApiRouter, services: Services) {
  // An import is read under the audience it fills: another audience's path does not find it.
  api.get(
    '/audiences/:audience_id/contacts/import/:import_id',
    async (req) => {
      const job = await findContactImport(services.db, req.auth, req.params.import_id);
      if (!job || job.audience_id !== req.params.audience_id)
        throw notFound('Contact import', req.params.import_id);
      return ok(job);
    },
    {
      schema: {
        tag: 'Contacts',
        summary: 'Get a contact import and its progress',
        responses: { 200: ContactImport },
      },
    },
  );
}
