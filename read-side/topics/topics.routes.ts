import { Topic, TopicList } from '../../domain/topics/topics.response.ts';
import { queryRoutes } from '../../platform/http/query-routes.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { findTopic, listTopics } from './topics.queries.ts';

export function topicQueryRoutes(api: ApiRouter, services: Services) {
  const topics = queryRoutes(api, { tag: 'Topics', name: 'Topic' });
  topics.list('/topics', { summary: 'List topics', responses: { 200: TopicList } }, (req, page) =>
    listTopics(services.db, req.auth, page),
  );
  topics.get('/topics/:topic_id', { summary: 'Get a topic', responses: { 200: Topic } }, (req) =>
    findTopic(services.db, req.auth, req.params.topic_id),
  );
}
