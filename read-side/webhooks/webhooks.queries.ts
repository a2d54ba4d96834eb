import { DELIVERY_ID, WEBHOOK_ID } from '../../domain/webhooks/webhook.events.ts';
import type { Database } from '../../platform/db/database.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { iso, listPage } from '../pagination.ts';
import { readModels } from '../read-models.ts';
import type { DELIVERY_STATUSES, DeliveryLog } from './delivery-log.schema.ts';

/**
 * The webhooks read model joined with the delivery log (delivery-log.schema.ts): the endpoints' delivery health
 * (webhook_endpoints), their deliveries and attempts. Every query is filtered by organization and mode.
 */

const deliveryLog = (db: Database) => readModels(db).withTables<DeliveryLog>();

const webhookColumns = [
  'w.id as id',
  'w.url as url',
  'w.events as events',
  'w.active as active',
  'w.disabled_reason as disabled_reason',
  'w.disabled_detail as disabled_detail',
  'w.disabled_at as disabled_at',
  'w.secret_rotated_at as secret_rotated_at',
  'w.created_at as created_at',
  'w.updated_at as updated_at',
  'e.consecutive_failures as consecutive_failures',
  'e.total_failures as total_failures',
  'e.last_success_at as last_success_at',
  'e.last_failure_at as last_failure_at',
] as const;

function webhooks(db: Database, tenant: Tenant) {
  return deliveryLog(db)
    .selectFrom('webhooks as w')
    .leftJoin('webhook_endpoints as e', 'e.webhook_id', 'w.id')
    .select(webhookColumns)
    .where('w.org_id', '=', tenant.orgId)
    .where('w.mode', '=', tenant.mode)
    .where('w.deleted_at', 'is', null);
}

type WebhookRow = Awaited<ReturnType<ReturnType<typeof webhooks>['executeTakeFirstOrThrow']>>;

/** The public shape of a webhook. Never the secret: that is shown on creation and rotation only. */
function toView(r: WebhookRow) {
  return {
    id: r.id,
    object: 'webhook',
    url: r.url,
    events: r.events,
    active: r.active,
    disabled_reason: r.disabled_reason,
    disabled_detail: r.disabled_detail,
    disabled_at: iso(r.disabled_at),
    consecutive_failures: Number(r.consecutive_failures ?? 0),
    total_failures: Number(r.total_failures ?? 0),
    last_success_at: iso(r.last_success_at),
    last_failure_at: iso(r.last_failure_at),
    secret_rotated_at: iso(r.secret_rotated_at),
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}

export type WebhookView = ReturnType<typeof toView>;

export async function getWebhook(db: Database, tenant: Tenant, id: string): Promise<WebhookView | null> {
  if (!WEBHOOK_ID.test(id)) return null;
  const row = await webhooks(db, tenant).where('w.id', '=', id).executeTakeFirst();
  return row ? toView(row) : null;
}

export async function listWebhooks(db: Database, tenant: Tenant, page: PageParams) {
  return listPage(webhooks(db, tenant), page, (rows) => rows.map(toView), 'w.id');
}

export async function findDelivery(db: Database, tenant: Tenant, webhookId: string, deliveryId: string) {
  if (!DELIVERY_ID.test(deliveryId)) return null;
  return (
    (await deliveryLog(db)
      .selectFrom('webhook_deliveries')
      .select(['id', 'status'])
      .where('id', '=', deliveryId)
      .where('webhook_id', '=', webhookId)
      .where('org_id', '=', tenant.orgId)
      .where('mode', '=', tenant.mode)
      .executeTakeFirst()) ?? null
  );
}

interface AttemptView {
  attempt: number;
  attempted_at: string | null;
  response_status: number | null;
  latency_ms: number;
  response_excerpt: string | null;
  error: string | null;
}

/** The attempts of these deliveries, each delivery's in the order they were recorded. */
async function attemptsOf(db: Database, deliveryIds: string[]): Promise<Map<string, AttemptView[]>> {
  const byDelivery = new Map<string, AttemptView[]>();
  if (deliveryIds.length === 0) return byDelivery;
  const attempts = await deliveryLog(db)
    .selectFrom('webhook_attempts')
    .select([
      'delivery_id',
      'attempt',
      'attempted_at',
      'response_status',
      'latency_ms',
      'response_excerpt',
      'error',
    ])
    .where('delivery_id', 'in', deliveryIds)
    .orderBy('id')
    .execute();
  for (const { delivery_id, attempted_at, ...a } of attempts) {
    const list = byDelivery.get(delivery_id) ?? [];
    list.push({ ...a, attempted_at: iso(attempted_at) });
    byDelivery.set(delivery_id, list);
  }
  return byDelivery;
}

/** The delivery log of one webhook, newest first, each delivery with its attempts. */
export async function listDeliveries(
  db: Database,
  tenant: Tenant,
  webhookId: string,
  page: PageParams & { status?: string },
) {
  let q = deliveryLog(db)
    .selectFrom('webhook_deliveries')
    .select([
      'id',
      'webhook_id',
      'event_type',
      'status',
      'next_attempt_at',
      'last_response_status',
      'last_error',
      'body',
      'created_at',
      'updated_at',
      'completed_at',
    ])
    .where('webhook_id', '=', webhookId)
    .where('org_id', '=', tenant.orgId)
    .where('mode', '=', tenant.mode);
  if (page.status) q = q.where('status', '=', page.status as (typeof DELIVERY_STATUSES)[number]);
  return listPage(q, page, async (rows) => {
    const attempts = await attemptsOf(
      db,
      rows.map((d) => d.id),
    );
    return rows.map((d) => ({
      id: d.id,
      object: 'webhook_delivery',
      webhook_id: d.webhook_id,
      event_type: d.event_type,
      status: d.status,
      next_attempt_at: d.status === 'pending' ? iso(d.next_attempt_at) : null,
      last_response_status: d.last_response_status,
      last_error: d.last_error,
      payload: JSON.parse(d.body),
      attempts: attempts.get(d.id) ?? [],
      created_at: iso(d.created_at),
      updated_at: iso(d.updated_at),
      completed_at: iso(d.completed_at),
    }));
  });
}
