import type { Selectable } from 'kysely';
import { LEFT_POSTLINE_SQL } from '../../domain/emails/status.ts';
import type { Database } from '../../platform/db/database.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { iso, listPage } from '../pagination.ts';
import { liveRows } from '../read-models.ts';
import type { BroadcastsTable } from './broadcasts.schema.ts';

const broadcastJson = (r: Selectable<BroadcastsTable>) => ({
  object: 'broadcast',
  id: r.id,
  name: r.name,
  audience_id: r.audience_id,
  topic_id: r.topic_id,
  from: r.from_address,
  reply_to: r.reply_to,
  subject: r.subject,
  html: r.html,
  text: r.text_body,
  template_id: r.template_id,
  preview_text: r.preview_text,
  status: r.status,
  send_at: iso(r.send_at),
  progress: {
    contacts_processed: r.contacts_processed,
    skipped: {
      unsubscribed: r.skipped_unsubscribed,
      suppressed: r.skipped_suppressed,
      not_subscribed: r.skipped_not_subscribed,
      quota_exceeded: r.skipped_quota,
      render_failed: r.skipped_failed,
    },
  },
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
  started_at: iso(r.started_at),
  sent_at: iso(r.sent_at),
  canceled_at: iso(r.canceled_at),
});

const live = (db: Database, tenant: Tenant) => liveRows(db, 'broadcasts', tenant).selectAll();

/** What became of a broadcast's emails, counted from the `emails` read model as it is now. */
async function countsOf(db: Database, r: Selectable<BroadcastsTable>) {
  const { rows } = await db.query<Record<string, number>>(
    `SELECT count(*) FILTER (WHERE status IN ('queued', 'sending'))::int AS queued,
       count(*) FILTER (WHERE status IN (${LEFT_POSTLINE_SQL}))::int AS sent,
       count(*) FILTER (WHERE status IN ('delivered', 'complained'))::int AS delivered,
       count(*) FILTER (WHERE status = 'bounced')::int AS bounced,
       count(*) FILTER (WHERE status = 'complained')::int AS complained,
       count(*) FILTER (WHERE status = 'canceled')::int AS canceled,
       count(*) FILTER (WHERE opens > 0)::int AS opened,
       count(*) FILTER (WHERE clicks > 0)::int AS clicked
     FROM emails WHERE broadcast_id = $1`,
    [r.id],
  );
  return { recipients: r.recipients, ...rows[0], unsubscribed: r.unsubscribed };
}

/** One broadcast with its live counts. */
export async function findBroadcast(db: Database, tenant: Tenant, broadcastId: string) {
  const row = await live(db, tenant).where('id', '=', broadcastId).executeTakeFirst();
  return row ? { ...broadcastJson(row), counts: await countsOf(db, row) } : null;
}

/** Whether the tenant has the broadcast (not deleted). */
export async function broadcastExists(db: Database, tenant: Tenant, broadcastId: string) {
  const row = await liveRows(db, 'broadcasts', tenant)
    .select('id')
    .where('id', '=', broadcastId)
    .executeTakeFirst();
  return Boolean(row);
}

/**
 * A page of the broadcast's emails nobody has received yet (`queued`, or `sending` or `sent` with no final outcome:
 * for an email of one recipient, waiting for an attempt or a retry), after the id `after`, in id order.
 */
export async function unfinishedEmailsOf(db: Database, broadcastId: string, after: string, limit: number) {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM emails WHERE broadcast_id = $1 AND status IN ('queued', 'sending', 'sent') AND id > $2
     ORDER BY id LIMIT $3`,
    [broadcastId, after, limit],
  );
  return rows.map((r) => r.id);
}

/** Newest first; each with its recipients so far (the counts of its emails are on the broadcast itself). */
export async function listBroadcasts(db: Database, tenant: Tenant, page: PageParams) {
  return listPage(live(db, tenant), page, (rows) =>
    rows.map((r) => ({ ...broadcastJson(r), recipients: r.recipients })),
  );
}

/** What a broadcast's content names, by the column that holds it. */
const NAMED_IN = { template: 'template_id', topic: 'topic_id', audience: 'audience_id' } as const;

/**
 * A broadcast of the tenant that still sends to contacts to come (scheduled or sending) and names the template,
 * topic or audience, or null: while there is one, that resource may not be deleted (`refuseWhileBroadcastUses`,
 * write-side/broadcasts/broadcast-checks.ts).
 */
export async function broadcastUsing(
  db: Database,
  tenant: Tenant,
  resource: keyof typeof NAMED_IN,
  resourceId: string,
) {
  const row = await liveRows(db, 'broadcasts', tenant)
    .select(['id', 'status'])
    .where(NAMED_IN[resource], '=', resourceId)
    .where('status', 'in', ['scheduled', 'sending'])
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return row ?? null;
}
