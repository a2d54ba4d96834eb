import { z } from 'zod';
import { queueDestination } from '../../domain/queue/queue.decider.ts';
import {
  QueueList,
  QueueReplyList,
  type QueueView,
  queueRowJson,
} from '../../domain/queue/queue.response.ts';
import { queryRoutes } from '../../platform/http/query-routes.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import type { Services } from '../../platform/services.ts';

const query = z.strictObject({
  destination: z.string().optional().meta({ description: 'Only this recipient domain.' }),
});

/**
 * The organization's outbound queue in its key's mode: what waits for which destination, and why. `view` reads it
 * (the composition root gives the delivery process's reads: its tables are that process's).
 */
export function queueQueryRoutes(api: ApiRouter, services: Services, view: QueueView) {
  const queue = queryRoutes(api, { tag: 'Queue', name: 'Destination' });
  queue.get(
    '/queue',
    {
      summary: 'What waits for delivery, per destination and lane',
      description:
        'Counts of the messages waiting per recipient domain and lane (`queued`, `deferred`, `held`, `in_flight`), whether delivery there is paused and until when, and its last reply. Not paged: one row per destination and lane.',
      query,
      responses: { 200: QueueList },
    },
    async (req) => {
      const q = parse(query, req.query, 'query');
      const destination = q.destination === undefined ? undefined : queueDestination(q.destination);
      const { orgId, mode } = req.auth;
      const rows = await view.rows(services.db, { orgId, mode, destination }, services.clock.now());
      return { object: 'list', data: rows.map(queueRowJson) };
    },
  );
  queue.get(
    '/queue/:destination/replies',
    {
      summary: "A destination's recent replies",
      description:
        "The SMTP replies of the last day from one recipient domain to this organization's mail in the key's mode, newest first (at most 50).",
      responses: { 200: QueueReplyList },
    },
    async (req) => {
      const destination = queueDestination(req.params.destination);
      const { orgId, mode } = req.auth;
      const rows = await view.replies(services.db, { orgId, mode, destination }, services.clock.now());
      return {
        object: 'list',
        data: rows.map((r) => ({ ...r, at: new Date(r.at).toISOString() })),
      };
    },
  );
}
