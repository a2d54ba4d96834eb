import { notFound } from '../../platform/errors.ts';
import { listQuery, parsePage } from '../../platform/http/pagination.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { findTopic, listTopics } from './topics.queries.ts';
import { Topic, TopicList } from './topics.response.ts';

const query = listQuery();

export function topicQueryRoutes(api: ApiRouter, services: Services) {
  api.get(
    '/topics',
    async (req) => ok(await listTopics(services.db, req.auth, parsePage(req.query, query))),
    { schema: { tag: 'Topics', summary: 'List topics', query, responses: { 200: TopicList } } },
  );
  api.get(
    '/topics/:topic_id',
    async (req) => {
      const topic = await findTopic(services.db, req.auth, req.params.topic_id);
      if (!topic) throw notFound('Topic', req.params.topic_id);
      return ok(topic);
    },
    { schema: { tag: 'Topics', summary: 'Get a topic', responses: { 200: Topic } } },
  );
}
