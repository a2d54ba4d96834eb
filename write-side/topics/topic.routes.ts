import { z } from 'zod';
import { notFound } from '../../platform/errors.ts';
import { metaOf } from '../../platform/http/auth-context.ts';
import { Deleted } from '../../platform/http/route-schema.ts';
import { type ApiRouter, created, ok } from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import type { Services } from '../../platform/services.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { findTopic } from '../../read-side/topics/topics.queries.ts';
import { Topic } from '../../read-side/topics/topics.response.ts';
import { createTopic, deleteTopic, updateTopic } from './topic.commands.ts';

/** Projections that serve what these routes change; a response waits for them (read-your-writes). */
export const TOPIC_PROJECTIONS = ['topics'];

const TOPIC_ID = /^top_[0-9a-z]{1,60}$/;

const name = z.string().trim().min(1, 'is required').max(100, 'must be at most 100 characters');
const description = z.string().trim().max(1000, 'must be at most 1000 characters').nullable();

const createBody = z
  .object({
    name,
    description: description.default(null),
    default_subscription: z.enum(['opt_in', 'opt_out'], { error: 'must be `opt_in` or `opt_out`' }),
  })
  .strict();
const updateBody = z.object({ name: name.optional(), description: description.optional() }).strict();

export function topicCommandRoutes(api: ApiRouter, services: Services) {
  const answer = async (tenant: Tenant, topicId: string, position?: string) => {
    await services.readYourWrites.waitFor(TOPIC_PROJECTIONS, position);
    const topic = await findTopic(services.db, tenant, topicId);
    if (!topic) throw notFound('Topic', topicId);
    return topic;
  };
  const known = (id: string) => {
    if (!TOPIC_ID.test(id)) throw notFound('Topic', id);
    return id;
  };

  api.post(
    '/topics',
    async (req) => {
      const body = parse(createBody, req.body);
      const { topicId, position } = await createTopic(services, metaOf(req.auth), {
        name: body.name,
        description: body.description,
        defaultSubscription: body.default_subscription,
      });
      return created(await answer(req.auth, topicId, position));
    },
    {
      schema: {
        tag: 'Topics',
        summary: 'Create a topic',
        body: createBody,
        responses: { 201: Topic },
        errors: ['conflict'],
      },
    },
  );

  api.patch(
    '/topics/:topic_id',
    async (req) => {
      const id = known(req.params.topic_id);
      const body = parse(updateBody, req.body ?? {});
      const { position } = await updateTopic(services, metaOf(req.auth), id, body);
      return ok(await answer(req.auth, id, position));
    },
    {
      schema: {
        tag: 'Topics',
        summary: 'Change a topic',
        body: updateBody,
        responses: { 200: Topic },
        errors: ['conflict'],
      },
    },
  );

  api.delete(
    '/topics/:topic_id',
    async (req) => {
      const id = known(req.params.topic_id);
      const { position } = await deleteTopic(services, metaOf(req.auth), id);
      await services.readYourWrites.waitFor(TOPIC_PROJECTIONS, position);
      return ok({ id, deleted: true });
    },
    {
      schema: { tag: 'Topics', summary: 'Delete a topic', responses: { 200: Deleted }, errors: ['conflict'] },
    },
  );
}
