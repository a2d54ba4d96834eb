import { z } from 'zod';
import { Topic } from '../../domain/topics/topics.response.ts';
import { metaOf } from '../../platform/auth/auth-context.ts';
import { invalidField } from '../../platform/errors.ts';
import { commandRoutes } from '../../platform/http/command-routes.ts';
import { resourceName } from '../../platform/http/route-schema.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import { idShape } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { createTopic, deleteTopic, updateTopic } from './topic.commands.ts';

/** Projections that serve what these routes change; a response waits for them (read-your-writes). */
export const TOPIC_PROJECTIONS = ['topics'];

const name = resourceName(100);
const description = z.string().trim().max(1000, 'must be at most 1000 characters').nullable();

const createBody = z
  .object({
    name,
    description: description.default(null),
    default_subscription: z.enum(['opt_in', 'opt_out'], { error: 'must be `opt_in` or `opt_out`' }),
  })
  .strict();
const updateBody = z
  .object({
    name: name.optional(),
    description: description.optional(),
    // Resend's SDK repeats the path's id in the body (`topics.update({ id, … })`).
    id: z.string().optional().meta({ description: 'The path’s topic id again, as Resend’s SDK sends it' }),
  })
  .strict();

export function topicCommandRoutes(api: ApiRouter, services: Services) {
  const topics = commandRoutes(api, services, {
    tag: 'Topics',
    name: 'Topic',
    param: 'topic_id',
    idPattern: idShape('top'),
    projections: TOPIC_PROJECTIONS,
    read: (tenant, id) => services.lookUps.findTopic(services.db, tenant, id),
    response: Topic,
  });

  topics.create(
    '/topics',
    { summary: 'Create a topic', body: createBody, errors: ['conflict'] },
    async (req) => {
      const body = parse(createBody, req.body);
      const { topicId: id, position } = await createTopic(services, metaOf(req.auth), {
        name: body.name,
        description: body.description,
        defaultSubscription: body.default_subscription,
      });
      return { id, position };
    },
  );

  topics.change(
    'PATCH',
    '/topics/:topic_id',
    { summary: 'Change a topic', body: updateBody, errors: ['conflict'] },
    (req, id) => {
      const { id: repeated, ...change } = parse(updateBody, req.body);
      if (repeated !== undefined && repeated !== id)
        throw invalidField('id', 'must be the topic id of the path');
      return updateTopic(services, metaOf(req.auth), id, change);
    },
  );

  topics.delete('/topics/:topic_id', { summary: 'Delete a topic', errors: ['conflict'] }, deleteTopic);
}
