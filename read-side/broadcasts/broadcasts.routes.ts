import { Broadcast, BroadcastList } from '../../domain/broadcasts/broadcasts.response.ts';
import { queryRoutes } from '../../platform/http/query-routes.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { findBroadcast, listBroadcasts } from './broadcasts.queries.ts';

export function broadcastQueryRoutes(api: ApiRouter, services: Services) {
  const broadcasts = queryRoutes(api, { tag: 'Broadcasts', name: 'Broadcast' });
  broadcasts.list(
    '/broadcasts',
    { summary: 'List broadcasts', responses: { 200: BroadcastList } },
    (req, page) => listBroadcasts(services.db, req.auth, page),
  );
  broadcasts.get(
    '/broadcasts/:broadcast_id',
    { summary: 'Get a broadcast with the counts of its emails', responses: { 200: Broadcast } },
    (req) => findBroadcast(services.db, req.auth, req.params.broadcast_id),
  );
}
