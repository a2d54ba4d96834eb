import type { Database } from '../../platform/db/database.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { iso, listPage } from '../pagination.ts';
import { readModels } from '../read-models.ts';

/**
 * The webhooks read model joined with the dispatcher's health counters (webhook_endpoints) and delivery log
 * (webhook_deliveries, webhook_attempts). Those are process-manager state, read here, written only by
 * processes/webhooks. Every query is filtered by organization and mode.
 */

export const WEBHOOK_ID = /^wh_[0-9a-z]{26}$/;
export const DELIVERY_ID = /^whl_[0-9a-z]{26}$/;

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

/**
 * The dispatcher's health counters of an endpoint, as this read joins them. The table is process-manager state
 * (processes/webhooks/webhooks.schema.ts, untyped there), so only the columns read here are declared.
 */
interface EndpointHealth {
  webhook_id: string;
  consecutive_failures: number;
  total_failures: number;
  last_success_at: Date | null;
  last_failure_at: Date | null;
}

function webhooks(db: Database, tenant: Tenant) {
  return readModels(db)
    .withTables<{ webhook_endpoints: EndpointHealth }>()
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

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'exhausted', 'canceled'] as const;

export async function findDelivery(db: Database, tenant: Tenant, webhookId: string, deliveryId: string) {
  if (!DELIVERY_ID.test(deliveryId)) return null;
  return (
    (await db.kysely
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

/**
 * A first attempt that succeeded is kept in the delivery row rather than in webhook_attempts (see
 * moveFirstAttempts in processes/webhooks/deliveries.ts): its time and status are the row's completion time and
 * last status.
 */
const firstAttemptOf = (d: any): AttemptView | null =>
  d.first_latency_ms === null
    ? null
    : {
        attempt: 1,
        attempted_at: iso(d.completed_at),
        response_status: d.last_response_status,
        latency_ms: d.first_latency_ms,
        response_excerpt: d.first_response_excerpt,
        error: null,
      };

/** The delivery log of one webhook, newest first, each delivery with its attempts. */
export async function listDeliveries(
  db: Database,
  tenant: Tenant,
  webhookId: string,
  page: PageParams & { status?: string },
) {
  let q = db.kysely
    .selectFrom('webhook_deliveries')
    .select([
      'id',
      'webhook_id',
      'event_type',
      'status',
      'attempts',
      'next_attempt_at',
      'last_response_status',
      'last_error',
      'body',
      'created_at',
      'updated_at',
      'completed_at',
      'first_latency_ms',
      'first_response_excerpt',
    ])
    .where('webhook_id', '=', webhookId)
    .where('org_id', '=', tenant.orgId)
    .where('mode', '=', tenant.mode);
  if (page.status) q = q.where('status', '=', page.status);
  return listPage(q, page, async (rows: any[]) => {
    const ids = rows.map((d) => d.id);
    const attempts = ids.length
      ? await db.kysely
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
          .where('delivery_id', 'in', ids)
          .orderBy('id')
          .execute()
      : [];
    const byDelivery = new Map<string, AttemptView[]>();
    for (const a of attempts) {
      const list = byDelivery.get(a.delivery_id) ?? [];
      list.push({
        attempt: a.attempt,
        attempted_at: iso(a.attempted_at),
        response_status: a.response_status,
        latency_ms: a.latency_ms,
        response_excerpt: a.response_excerpt,
        error: a.error,
      });
      byDelivery.set(a.delivery_id, list);
    }
    for (const d of rows) {
      const first = firstAttemptOf(d);
      if (!first) continue;
      const list = byDelivery.get(d.id) ?? [];
      list.push(first);
      // By time: attempts of an earlier round recorded after the delivery was reset come before it.
      list.sort((a, b) => Date.parse(a.attempted_at!) - Date.parse(b.attempted_at!));
      byDelivery.set(d.id, list);
    }
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
      attempts: byDelivery.get(d.id) ?? [],
      created_at: iso(d.created_at),
      updated_at: iso(d.updated_at),
      completed_at: iso(d.completed_at),
    }));
  });
}
