import { Readable } from 'node:stream';
import { z } from 'zod';
import { ContactImport } from '../../domain/contact-imports/contact-imports.response.ts';
import { metaOf } from '../../platform/auth/auth-context.ts';
import { AppError } from '../../platform/errors.ts';
import { knownId } from '../../platform/http/command-routes.ts';
import { type ApiRouter, waitAfterCommit } from '../../platform/http/router.ts';
import { idShape } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { startContactImport } from './contact-import.commands.ts';

/** Projections that serve what these routes change; a response waits for them (read-your-writes). */
export const CONTACT_IMPORT_PROJECTIONS = ['contact_imports'];

/** For the document only: the route reads the body as a stream (docs/contacts.md describes the columns). */
const csvFile = z.string().meta({
  description:
    'A UTF-8 CSV file whose first row is the header: an `email` column, optionally `first_name` and `last_name`; every other named column is a property.',
  example: 'email,first_name,last_name\nada@example.com,Ada,Lovelace\n',
});

export function contactImportCommandRoutes(api: ApiRouter, services: Services) {
  // The body is the CSV file itself (platform/http/app.ts hands it over as the request stream).
  api.post(
    '/audiences/:audience_id/contacts/import',
    async (req) => {
      const audienceId = knownId(req.params.audience_id, idShape('aud'), 'Audience');
      if (!(req.body instanceof Readable))
        throw new AppError('validation_error', 'The file is empty: send a CSV file with a header row.');
      const { importId, position } = await startContactImport(services, metaOf(req.auth), {
        audienceId,
        file: req.body,
        maxBytes: services.config.CONTACT_IMPORT_MAX_BYTES,
      }).catch((error) => {
        // The client went away before the file ended: nothing was kept.
        if (error?.code === 'ECONNRESET' || error?.code === 'ERR_STREAM_PREMATURE_CLOSE')
          throw new AppError('malformed_request', 'The upload ended before the file did.');
        throw error;
      });
      await waitAfterCommit(services, CONTACT_IMPORT_PROJECTIONS, position, { id: importId });
      return { status: 202, body: await services.lookUps.findContactImport(services.db, req.auth, importId) };
    },
    {
      schema: {
        tag: 'Contacts',
        summary: 'Import contacts into an audience from a CSV file',
        description:
          'Answers 202 once the file is stored; the rows are written in the background. Read the import for its progress.',
        bodyType: 'text/csv',
        body: csvFile,
        responses: { 202: ContactImport },
      },
    },
  );
}
