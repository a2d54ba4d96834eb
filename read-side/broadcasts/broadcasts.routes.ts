import { notFound } from '../../platform/errors.ts';
import { listQuery, parsePage } from '../../platform/http/pagination.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { findBroadcast, listBroadcasts } from './broadcasts.queries.ts';
import { Broadcast, BroadcastList } from './broadcasts.response.ts';

const query = listQuery();

export function broadcastQueryRoutes(api: ApiRouter, services: Services) {
  api.get(
    '/broadcasts',
    async (req) => ok(await listBroadcasts(services.db, req.auth, parsePage(req.query, query))),
    { schema: { tag: 'Broadcasts', summary: 'List broadcasts', query, responses: { 200: BroadcastList } } },
  );
  api.get(
    '/broadcasts/:broadcast_id',
    async (req) => {
      const broadcast = await findBroadcast(services.db, req.auth, req.params.broadcast_id);
      if (!broadcast) throw notFound('Broadcast', req.params.broadcast_id);
      return ok(broadcast);
    },
    {
      schema: {
        tag: 'Broadcasts',
        summary: 'Get a broadcast with the counts of its emails',
        responses: { 200: Broadcast },
      },
    },
  );
}
