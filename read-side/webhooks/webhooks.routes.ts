import { z } from 'zod';
import { notFound } from '../../platform/errors.ts';
import { parsePage } from '../../platform/http/pagination.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';
import { DELIVERY_STATUSES, getWebhook, listDeliveries, listWebhooks } from './webhooks.queries.ts';

export function webhookQueryRoutes(api: ApiRouter, services: Services) {
  api.get('/webhooks', async (req) => ok(await listWebhooks(services.db, req.auth, parsePage(req.query))));

  api.get('/webhooks/:webhook_id', async (req) => {
    const webhook = await getWebhook(services.db, req.auth, req.params.webhook_id);
    if (!webhook) throw notFound('Webhook', req.params.webhook_id);
    return ok(webhook);
  });

  api.get('/webhooks/:webhook_id/deliveries', async (req) => {
    const page = parsePage(req.query, { status: z.enum(DELIVERY_STATUSES).optional() });
    const webhook = await getWebhook(services.db, req.auth, req.params.webhook_id);
    if (!webhook) throw notFound('Webhook', req.params.webhook_id);
    return ok(await listDeliveries(services.db, req.auth, webhook.id, page));
  });
}
