import { z } from 'zod';
import { notFound } from '../../platform/errors.ts';
import { listQuery, parsePage } from '../../platform/http/pagination.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { DELIVERY_STATUSES, getWebhook, listDeliveries, listWebhooks } from './webhooks.queries.ts';
import { Webhook, WebhookDeliveryList, WebhookList } from './webhooks.response.ts';

const query = listQuery();
const deliveriesQuery = listQuery({ status: z.enum(DELIVERY_STATUSES).optional() });

export function webhookQueryRoutes(api: ApiRouter, services: Services) {
  api.get(
    '/webhooks',
    async (req) => ok(await listWebhooks(services.db, req.auth, parsePage(req.query, query))),
    { schema: { tag: 'Webhooks', summary: 'List webhooks', query, responses: { 200: WebhookList } } },
  );

  api.get(
    '/webhooks/:webhook_id',
    async (req) => {
      const webhook = await getWebhook(services.db, req.auth, req.params.webhook_id);
      if (!webhook) throw notFound('Webhook', req.params.webhook_id);
      return ok(webhook);
    },
    { schema: { tag: 'Webhooks', summary: 'Get a webhook', responses: { 200: Webhook } } },
  );

  api.get(
    '/webhooks/:webhook_id/deliveries',
    async (req) => {
      const page = parsePage(req.query, deliveriesQuery);
      const webhook = await getWebhook(services.db, req.auth, req.params.webhook_id);
      if (!webhook) throw notFound('Webhook', req.params.webhook_id);
      return ok(await listDeliveries(services.db, req.auth, webhook.id, page));
    },
    {
      schema: {
        tag: 'Webhooks',
        summary: 'The delivery log of a webhook, with every attempt',
        query: deliveriesQuery,
        responses: { 200: WebhookDeliveryList },
      },
    },
  );
}
