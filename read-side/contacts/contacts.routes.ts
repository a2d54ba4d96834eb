import { z } from 'zod';
import { notFound } from '../../platform/errors.ts';
import { listQuery, parsePage } from '../../platform/http/pagination.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { findAudience } from '../audiences/audiences.queries.ts';
import { contactTopics, findContact, listContacts } from './contacts.queries.ts';
import { Contact, ContactList, ContactTopicList } from './contacts.response.ts';

const filters = {
  audience_id: z.string().min(1).max(100).optional(),
  unsubscribed: z
    .enum(['true', 'false'], { error: 'must be true or false' })
    .transform((v) => v === 'true')
    .optional(),
  email: z.string().min(1).max(254).optional(),
};
const query = listQuery(filters);
const { audience_id: _, ...memberFilters } = filters;
const membersQuery = listQuery(memberFilters);

export function contactQueryRoutes(api: ApiRouter, services: Services) {
  api.get(
    '/contacts',
    async (req) => ok(await listContacts(services.db, req.auth, parsePage(req.query, query))),
    { schema: { tag: 'Contacts', summary: 'List contacts', query, responses: { 200: ContactList } } },
  );
  // Resend's SDK lists an audience's contacts here (`contacts.list({ audienceId })`): an alias, docs/resend.md.
  api.get(
    '/segments/:audience_id/contacts',
    async (req) => {
      const page = parsePage(req.query, membersQuery);
      if (!(await findAudience(services.db, req.auth, req.params.audience_id)))
        throw notFound('Audience', req.params.audience_id);
      return ok(await listContacts(services.db, req.auth, { ...page, audience_id: req.params.audience_id }));
    },
    {
      schema: {
        tag: 'Contacts',
        summary: "List an audience's contacts (Resend's path)",
        description: 'The same as `GET /v1/contacts?audience_id=…`.',
        query: membersQuery,
        responses: { 200: ContactList },
      },
    },
  );
  api.get(
    '/contacts/:contact_id',
    async (req) => {
      const contact = await findContact(services.db, req.auth, req.params.contact_id);
      if (!contact) throw notFound('Contact', req.params.contact_id);
      return ok(contact);
    },
    { schema: { tag: 'Contacts', summary: 'Get a contact', responses: { 200: Contact } } },
  );
  api.get(
    '/contacts/:contact_id/topics',
    async (req) => {
      if (!(await findContact(services.db, req.auth, req.params.contact_id)))
        throw notFound('Contact', req.params.contact_id);
      return ok(await contactTopics(services.db, req.auth, req.params.contact_id));
    },
    {
      schema: {
        tag: 'Contacts',
        summary: "A contact's topic subscriptions",
        responses: { 200: ContactTopicList },
      },
    },
  );
}
