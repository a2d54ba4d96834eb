import { z } from 'zod';
import { notFound } from '../../platform/errors.ts';
import { parsePage } from '../../platform/http/pagination.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { contactTopics, findContact, listContacts } from './contacts.queries.ts';

const filters = {
  audience_id: z.string().min(1).max(100).optional(),
  unsubscribed: z
    .enum(['true', 'false'], { error: 'must be true or false' })
    .transform((v) => v === 'true')
    .optional(),
  email: z.string().min(1).max(254).optional(),
};

export function contactQueryRoutes(api: ApiRouter, services: Services) {
  api.get('/contacts', async (req) =>
    ok(await listContacts(services.db, req.auth, parsePage(req.query, filters))),
  );
  api.get('/contacts/:contact_id', async (req) => {
    const contact = await findContact(services.db, req.auth, req.params.contact_id);
    if (!contact) throw notFound('Contact', req.params.contact_id);
    return ok(contact);
  });
  api.get('/contacts/:contact_id/topics', async (req) => {
    if (!(await findContact(services.db, req.auth, req.params.contact_id)))
      throw notFound('Contact', req.params.contact_id);
    return ok(await contactTopics(services.db, req.auth, req.params.contact_id));
  });
}
