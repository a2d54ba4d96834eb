import { z } from 'zod';
import {
  BOUNCE_TYPES,
  Broadcast,
  BroadcastClickedLinkList,
  BroadcastList,
  BroadcastRecipientList,
  RECIPIENT_TYPES,
} from '../../domain/broadcasts/broadcasts.response.ts';
import { invalidField } from '../../platform/errors.ts';
import { listQuery, type PageParams } from '../../platform/http/pagination.ts';
import { queryRoutes, under } from '../../platform/http/query-routes.ts';
import type { ApiRequest, ApiRouter } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { broadcastClickedLinks, broadcastRecipients } from './broadcast-recipients.queries.ts';
import { broadcastExists, findBroadcast, listBroadcasts } from './broadcasts.queries.ts';

/** Resend's query of `broadcasts.recipients`: the type is required, the bounce type only with `bounced`. */
const recipientsQuery = listQuery({
  type: z.enum(RECIPIENT_TYPES, { error: `must be one of ${RECIPIENT_TYPES.join(', ')}` }),
  email: z.string().min(1).max(320).optional(),
  bounce_type: z
    .enum([...(Object.keys(BOUNCE_TYPES) as (keyof typeof BOUNCE_TYPES)[]), 'undetermined'])
    .optional(),
});

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

  /** A list under a broadcast: the broadcast's 404 unless it is the caller's. */
  const underBroadcast = <P>(read: (req: ApiRequest, page: P) => Promise<unknown>) =>
    under((req) => broadcastExists(services.db, req.auth, req.params.broadcast_id), read);

  broadcasts.list(
    '/broadcasts/:broadcast_id/recipients',
    {
      summary: "A broadcast's recipients that got so far, or did so: delivered, opened, bounced…",
      query: recipientsQuery,
      responses: { 200: BroadcastRecipientList },
    },
    underBroadcast((req, page) => {
      if (page.bounce_type !== undefined && page.type !== 'bounced')
        throw invalidField('bounce_type', 'is only for `type=bounced`');
      return broadcastRecipients(services.db, req.auth, req.params.broadcast_id, page);
    }),
  );
  broadcasts.list(
    '/broadcasts/:broadcast_id/clicked-links',
    {
      summary: 'The links clicked in a broadcast’s emails, with their clicks',
      responses: { 200: BroadcastClickedLinkList },
    },
    underBroadcast((req, page: PageParams) =>
      broadcastClickedLinks(services.db, req.auth, req.params.broadcast_id, page),
    ),
  );
}
