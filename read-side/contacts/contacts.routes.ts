import { z } from 'zod';
import {
  BY_ID_OR_ADDRESS,
  Contact,
  ContactList,
  ContactTopicList,
} from '../../domain/contacts/contacts.response.ts';
import { notFound } from '../../platform/errors.ts';
import { listQuery } from '../../platform/http/pagination.ts';
import { queryRoutes } from '../../platform/http/query-routes.ts';
import type { ApiRequest, ApiRouter } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { findAudience } from '../audiences/audiences.queries.ts';
import { contactIdOf, contactTopics, findContact, listContacts } from './contacts.queries.ts';

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
  // A contact's path names it by its id or by its address (`contacts.get({ email })` in Resend's SDK).
  const contactOf = async (req: ApiRequest) => {
    const id = await contactIdOf(services.db, req.auth, req.params.contact_id);
    return id === null ? null : findContact(services.db, req.auth, id);
  };
  contacts.get(
    '/contacts/:contact_id',
    { summary: 'Get a contact', description: BY_ID_OR_ADDRESS, responses: { 200: Contact } },
    contactOf,
  );
  // Resend's SDK with `audienceId` (`contacts.get({ id, audienceId })`): the contact, when it is a member.
  contacts.get(
    '/audiences/:audience_id/contacts/:contact_id',
    {
      summary: "Get a contact of an audience (Resend's path)",
      description: `The contact when it is a member of the audience, else 404. ${BY_ID_OR_ADDRESS}`,
      responses: { 200: Contact },
    },
    async (req) => {
      const contact = await contactOf(req);
      return contact?.audience_ids.includes(req.params.audience_id) ? contact : null;
    },
  );
  contacts.get(
    '/contacts/:contact_id/topics',
    {
      summary: "A contact's topic subscriptions",
      description: BY_ID_OR_ADDRESS,
      responses: { 200: ContactTopicList },
    },
    async (req) => {
      const contact = await contactOf(req);
      return contact ? contactTopics(services.db, req.auth, contact.id) : null;
    },
  );
}
