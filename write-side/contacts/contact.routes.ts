import { z } from 'zod';
import { CONTACT_FIELD_RULES, CONTACT_LIMITS } from '../../domain/contacts/contact-fields.ts';
import { BY_ID_OR_ADDRESS, Contact, ContactTopicList } from '../../domain/contacts/contacts.response.ts';
import { metaOf } from '../../platform/auth/auth-context.ts';
import { notFound } from '../../platform/errors.ts';
import { commandRoutes, knownId } from '../../platform/http/command-routes.ts';
import { resendsName, unionError, zonedDateTime } from '../../platform/http/route-schema.ts';
import { type ApiRequest, type ApiRouter, ok } from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import { idShape } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import {
  changeMembership,
  createContact,
  deleteContact,
  setContactTopics,
  updateContact,
} from './contact.commands.ts';

const { email, personName } = CONTACT_FIELD_RULES;

/** Projections that serve what these routes change; a response waits for them (read-your-writes). */
export const CONTACT_PROJECTIONS = ['contacts'];

const AUDIENCE_ID = idShape('aud');
const properties = z
  .record(
    z
      .string()
      .regex(
        CONTACT_FIELD_RULES.propertyName,
        `names are 1 to ${CONTACT_LIMITS.propertyKeyChars} characters of A-Z a-z 0-9 _`,
      ),
    z.union(
      [
        z
          .string()
          .max(
            CONTACT_LIMITS.propertyValueChars,
            `must be at most ${CONTACT_LIMITS.propertyValueChars} characters`,
          ),
        z.number(),
        z.boolean(),
      ],
      {
        error: unionError(
          `must be a string of at most ${CONTACT_LIMITS.propertyValueChars} characters, a number or a boolean`,
        ),
      },
    ),
  )
  .refine((p) => Object.keys(p).length <= CONTACT_LIMITS.properties, {
    message: `must have at most ${CONTACT_LIMITS.properties} properties`,
  });
const consent = zonedDateTime.nullable();

const fields = {
  email,
  first_name: personName.optional(),
  last_name: personName.optional(),
  unsubscribed: z.boolean().optional(),
  properties: properties.optional(),
  consent_given_at: consent.optional(),
};
const createBody = z
  .object({
    ...fields,
    audience_ids: z.array(z.string().regex(AUDIENCE_ID, 'must be audience ids (aud_…)')).max(20).optional(),
  })
  .strict();
/** Resend's way to create a contact in an audience (`POST /audiences/{id}/contacts`): the audience is the path's. */
const createInAudienceBody = z.object(fields).strict();
const updateBody = z.object({ ...fields, email: email.optional() }).strict();
const topicsBody = z
  .array(
    // Resend's SDK names the topic `id` (`contacts.topics.update`).
    z.preprocess(
      resendsName('id', 'topic_id'),
      z
        .object({
          topic_id: z.string().regex(idShape('top'), 'must be a topic id (top_…)'),
          subscription: z.enum(['opt_in', 'opt_out'], { error: 'must be `opt_in` or `opt_out`' }),
        })
        .strict(),
    ),
  )
  .min(1, 'must name at least one topic')
  .max(100, 'must name at most 100 topics');

/** A create request's fields as the command takes them, absent ones at their defaults. */
const newContact = (body: z.infer<typeof createInAudienceBody>, audienceIds: string[]) => ({
  email: body.email,
  firstName: body.first_name ?? null,
  lastName: body.last_name ?? null,
  unsubscribed: body.unsubscribed ?? false,
  properties: body.properties ?? {},
  consentGivenAt: body.consent_given_at ?? null,
  audienceIds,
});

export function contactCommandRoutes(api: ApiRouter, services: Services) {
  const contacts = commandRoutes(api, services, {
    tag: 'Contacts',
    name: 'Contact',
    param: 'contact_id',
    idPattern: idShape('con'),
    named: (tenant, named) => services.lookUps.contactIdOf(services.db, tenant, named),
    projections: CONTACT_PROJECTIONS,
    read: (tenant, id) => services.lookUps.findContact(services.db, tenant, id),
    response: Contact,
  });
  const audienceIdOf = (req: ApiRequest) => knownId(req.params.audience_id, AUDIENCE_ID, 'Audience');

  contacts.create(
    '/contacts',
    { summary: 'Create a contact', body: createBody, errors: ['contact_exists', 'conflict'] },
    async (req) => {
      const body = parse(createBody, req.body);
      const { contactId: id, position } = await createContact(
        services,
        metaOf(req.auth),
        newContact(body, body.audience_ids ?? []),
      );
      return { id, position };
    },
  );

  // An alias for Resend's SDK (`contacts.create({ audienceId, … })`), docs/resend.md.
  contacts.create(
    '/audiences/:audience_id/contacts',
    {
      summary: 'Create a contact in an audience',
      description:
        'The same as `POST /v1/contacts` with `audience_ids: [audience_id]`; the path Resend’s SDK uses.',
      body: createInAudienceBody,
      errors: ['contact_exists', 'conflict'],
    },
    async (req) => {
      const audienceId = audienceIdOf(req);
      const body = parse(createInAudienceBody, req.body);
      if (!(await services.lookUps.findAudience(services.db, req.auth, audienceId)))
        throw notFound('Audience', audienceId);
      const { contactId: id, position } = await createContact(
        services,
        metaOf(req.auth),
        newContact(body, [audienceId]),
      );
      return { id, position };
    },
  );

  const change = (req: ApiRequest, id: string) => {
    const body = parse(updateBody, req.body);
    return updateContact(services, metaOf(req.auth), id, {
      email: body.email,
      firstName: body.first_name,
      lastName: body.last_name,
      unsubscribed: body.unsubscribed,
      properties: body.properties,
      consentGivenAt: body.consent_given_at,
    });
  };
  contacts.change(
    'PATCH',
    '/contacts/:contact_id',
    {
      summary: 'Change a contact',
      description: BY_ID_OR_ADDRESS,
      body: updateBody,
      errors: ['contact_exists', 'conflict'],
    },
    change,
  );
  // Resend's SDK with `audienceId` (`contacts.update({ id, audienceId, … })`): a member of the audience only.
  contacts.change(
    'PATCH',
    '/audiences/:audience_id/contacts/:contact_id',
    {
      summary: "Change a contact of an audience (Resend's path)",
      description: `As \`PATCH /v1/contacts/{id}\`, for a member of the audience (else 404). ${BY_ID_OR_ADDRESS}`,
      body: updateBody,
      errors: ['contact_exists', 'conflict'],
    },
    async (req, id) => {
      const contact = await services.lookUps.findContact(services.db, req.auth, id);
      if (!contact?.audience_ids.includes(req.params.audience_id)) throw notFound('Contact', id);
      return change(req, id);
    },
  );

  contacts.delete(
    '/contacts/:contact_id',
    {
      summary: 'Delete a contact and its personal data',
      description: BY_ID_OR_ADDRESS,
      errors: ['conflict'],
    },
    deleteContact,
  );

  api.patch(
    '/contacts/:contact_id/topics',
    async (req) => {
      const id = await contacts.id(req);
      const body = parse(topicsBody, req.body);
      const { position } = await setContactTopics(
        services,
        metaOf(req.auth),
        id,
        body.map((t) => ({ topicId: t.topic_id, subscription: t.subscription })),
      );
      await contacts.answer(req.auth, id, position);
      return ok(await services.lookUps.contactTopics(services.db, req.auth, id));
    },
    {
      schema: {
        tag: 'Contacts',
        summary: "Set a contact's topic subscriptions",
        description: BY_ID_OR_ADDRESS,
        body: topicsBody,
        responses: { 200: ContactTopicList },
        errors: ['conflict'],
      },
    },
  );

  // Membership: adding twice or removing a contact that is not a member changes nothing and answers the same.
  // `/contacts/{id}/segments/{segment_id}` is how Resend's SDK says it (`contacts.segments.add`/`remove`): an alias.
  for (const [method, member, path] of [
    ['PUT', true, '/audiences/:audience_id/contacts/:contact_id'],
    ['DELETE', false, '/audiences/:audience_id/contacts/:contact_id'],
    ['POST', true, '/contacts/:contact_id/segments/:audience_id'],
    ['DELETE', false, '/contacts/:contact_id/segments/:audience_id'],
  ] as const) {
    const resendPath = path.includes('/segments/');
    api.add(
      method,
      path,
      async (req) => {
        const audienceId = audienceIdOf(req);
        const contactId = await contacts.id(req);
        const meta = metaOf(req.auth);
        const { position } = await changeMembership(services, meta, contactId, audienceId, member);
        return ok(await contacts.answer(req.auth, contactId, position));
      },
      {
        schema: {
          tag: 'Contacts',
          summary:
            (member ? 'Add a contact to an audience' : 'Remove a contact from an audience') +
            (resendPath ? " (Resend's path)" : ''),
          description: `Changes nothing when it is so already, and answers the same. ${BY_ID_OR_ADDRESS}`,
          responses: { 200: Contact },
          errors: ['conflict'],
        },
      },
    );
  }
}
