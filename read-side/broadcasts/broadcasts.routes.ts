import { notFound } from '../../platform/errors.ts';
import { parsePage } from '../../platform/http/pagination.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { findBroadcast, listBroadcasts } from './broadcasts.queries.ts';

export function broadcastQueryRoutes(api: ApiRouter, services: Services) {
  api.get('/broadcasts', async (req) =>
    ok(await listBroadcasts(services.db, req.auth, parsePage(req.query))),
  );
  api.get('/broadcasts/:broadcast_id', async (req) => {
    const broadcast = await findBroadcast(services.db, req.auth, req.params.broadcast_id);
    if (!broadcast) throw notFound('Broadcast', req.params.broadcast_id);
    return ok(broadcast);
  });
}
