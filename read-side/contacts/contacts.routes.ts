import { z } from 'zod';
import { Contact, ContactList, ContactTopicList } from '../../domain/contacts/contacts.response.ts';
import { notFound } from '../../platform/errors.ts';
import { listQuery } from '../../platform/http/pagination.ts';
import { queryRoutes } from '../../platform/http/query-routes.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { findAudience } from '../audiences/audiences.queries.ts';
import { contactTopics, findContact, listContacts } from './contacts.queries.ts';

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
  const contacts = queryRoutes(api, { tag: 'Contacts', name: 'Contact' });
  contacts.list(
    '/contacts',
    { summary: 'List contacts', query, responses: { 200: ContactList } },
    (req, page) => listContacts(services.db, req.auth, page),
  );
  // Resend's SDK lists an audience's contacts here (`contacts.list({ audienceId })`): an alias, docs/resend.md.
  contacts.list(
    '/segments/:audience_id/contacts',
    {
      summary: "List an audience's contacts (Resend's path)",
      description: 'The same as `GET /v1/contacts?audience_id=…`.',
      query: membersQuery,
      responses: { 200: ContactList },
    },
    async (req, page) => {
      const audienceId = req.params.audience_id;
      if (!(await findAudience(services.db, req.auth, audienceId))) throw notFound('Audience', audienceId);
      return listContacts(services.db, req.auth, { ...page, audience_id: audienceId });
    },
  );
  contacts.get('/contacts/:contact_id', { summary: 'Get a contact', responses: { 200: Contact } }, (req) =>
    findContact(services.db, req.auth, req.params.contact_id),
  );
  contacts.get(
    '/contacts/:contact_id/topics',
    { summary: "A contact's topic subscriptions", responses: { 200: ContactTopicList } },
    async (req) => {
      const id = req.params.contact_id;
      return (await findContact(services.db, req.auth, id)) ? contactTopics(services.db, req.auth, id) : null;
    },
  );
}
