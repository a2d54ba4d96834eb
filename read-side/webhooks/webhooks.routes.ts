import { z } from 'zod';
import { Webhook, WebhookDeliveryList, WebhookList } from '../../domain/webhooks/webhooks.response.ts';
import { listQuery } from '../../platform/http/pagination.ts';
import { queryRoutes } from '../../platform/http/query-routes.ts';
import type { ApiRouter } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { DELIVERY_STATUSES } from './delivery-log.schema.ts';
import { getWebhook, listDeliveries, listWebhooks } from './webhooks.queries.ts';

const deliveriesQuery = listQuery({ status: z.enum(DELIVERY_STATUSES).optional() });

export function webhookQueryRoutes(api: ApiRouter, services: Services) {
  const webhooks = queryRoutes(api, { tag: 'Webhooks', name: 'Webhook' });
  webhooks.list('/webhooks', { summary: 'List webhooks', responses: { 200: WebhookList } }, (req, page) =>
    listWebhooks(services.db, req.auth, page),
  );
  webhooks.get('/webhooks/:webhook_id', { summary: 'Get a webhook', responses: { 200: Webhook } }, (req) =>
    getWebhook(services.db, req.auth, req.params.webhook_id),
  );
  webhooks.list(
    '/webhooks/:webhook_id/deliveries',
    {
      summary: 'The delivery log of a webhook, with every attempt',
      description:
        'A delivery that ended (any status but `pending`) is deleted with its attempts ' +
        '`WEBHOOK_DELIVERY_RETENTION_DAYS` (default 30) days after it ended: it is no longer listed, and retrying ' +
        'it answers 404; a replay of its time sends its event again. Pending deliveries are never deleted.',
      query: deliveriesQuery,
      responses: { 200: WebhookDeliveryList },
    },
    async (req, page) => {
      const webhook = await getWebhook(services.db, req.auth, req.params.webhook_id);
      return webhook && listDeliveries(services.db, req.auth, webhook.id, page);
    },
  );
}
