import { type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely';
import { BOUNCE_TYPES, type RecipientType } from '../../domain/broadcasts/broadcasts.response.ts';
import { LEFT_POSTLINE } from '../../domain/emails/status.ts';
import type { Database } from '../../platform/db/database.ts';
import type { PageParams } from '../../platform/http/pagination.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { listPage } from '../pagination.ts';
import { type ReadModels, readModels, tenantRows } from '../read-models.ts';

type Emails = ExpressionBuilder<ReadModels, 'emails'>;

/** A broadcast's email has one recipient: its address, in lower case. */
const address = sql<string>`emails.recipients->0->>'email'`;
/** Its bounce type, as Postline names it (`hard`, `soft`), when it bounced. */
const bounceType = sql<string | null>`emails.recipients->0->>'bounce_type'`;

/** The contact the email was for, found by its address (none once deleted: its personal data is forgotten). */
const contactId = (eb: Emails) =>
  eb
    .selectFrom('contacts as c')
    .select('c.id')
    .whereRef('c.org_id', '=', 'emails.org_id')
    .whereRef('c.mode', '=', 'emails.mode')
    .where('c.email_lower', '=', address);

/** Which of a broadcast's emails each type lists: those whose recipient got that far, or did that. */
const OF_TYPE: Record<RecipientType, (eb: Emails) => Expression<SqlBool>> = {
  sent: (eb) => eb('status', 'in', LEFT_POSTLINE),
  delivered: (eb) => eb('status', 'in', ['delivered', 'complained']),
  opened: (eb) => eb('opens', '>', 0),
  clicked: (eb) => eb('clicks', '>', 0),
  bounced: (eb) => eb('status', '=', 'bounced'),
  complained: (eb) => eb('status', '=', 'complained'),
  unsubscribed: (eb) =>
    eb.exists(
      eb
        .selectFrom('broadcast_unsubscribes as u')
        .select('u.contact_id')
        .whereRef('u.broadcast_id', '=', 'emails.broadcast_id')
        .where('u.contact_id', '=', contactId(eb)),
    ),
};

const bounceTypeOf = (type: string | null) =>
  type === BOUNCE_TYPES.permanent
    ? 'permanent'
    : type === BOUNCE_TYPES.transient
      ? 'transient'
      : 'undetermined';

export interface RecipientFilters {
  type: RecipientType;
  email?: string;
  bounce_type?: keyof typeof BOUNCE_TYPES | 'undetermined';
}

/** A page of the broadcast's recipients of one type, newest email first, each with what its type tells. */
export async function broadcastRecipients(
  db: Database,
  tenant: Tenant,
  broadcastId: string,
  page: PageParams & RecipientFilters,
) {
  let q = tenantRows(db, 'emails', tenant)
    .select((eb) => [
      'id',
      address.as('email'),
      contactId(eb).as('contact_id'),
      'opens',
      'clicks',
      bounceType.as('bounce_type'),
    ])
    .where('broadcast_id', '=', broadcastId)
    .where(OF_TYPE[page.type]);
  if (page.email !== undefined) q = q.where(address, '=', page.email.trim().toLowerCase());
  if (page.bounce_type !== undefined) {
    const type = page.bounce_type === 'undetermined' ? null : BOUNCE_TYPES[page.bounce_type];
    q = q.where(bounceType, type === null ? 'is' : '=', type);
  }
  return listPage(q, page, async (rows) => {
    const links =
      page.type === 'clicked'
        ? await linksOf(
            db,
            rows.map((r) => r.id),
          )
        : new Map();
    return rows.map((r) => ({
      id: r.id,
      contact_id: r.contact_id ?? null,
      email: r.email,
      ...(page.type === 'opened' && { count: r.opens }),
      ...(page.type === 'clicked' && { count: r.clicks, clicked_links: links.get(r.id) ?? [] }),
      ...(page.type === 'bounced' && { bounce_type: bounceTypeOf(r.bounce_type) }),
    }));
  });
}

/** The links clicked in each of the emails, most clicked first. */
async function linksOf(db: Database, emailIds: string[]) {
  const rows = await readModels(db)
    .selectFrom('email_link_clicks')
    .select(['email_id', 'link', 'clicks'])
    .where('email_id', 'in', emailIds.length ? emailIds : [''])
    .orderBy('clicks', 'desc')
    .orderBy('link')
    .execute();
  const by = new Map<string, { url: string; clicks: number }[]>();
  for (const r of rows)
    by.set(r.email_id, [...(by.get(r.email_id) ?? []), { url: r.link, clicks: r.clicks }]);
  return by;
}

/** A page of the links clicked in the broadcast's emails, each once, with its clicks and the emails it was clicked in. */
export async function broadcastClickedLinks(
  db: Database,
  tenant: Tenant,
  broadcastId: string,
  page: PageParams,
) {
  const q = readModels(db)
    .selectFrom('email_link_clicks as l')
    .innerJoin('emails', 'emails.id', 'l.email_id')
    .select((eb) => [
      'l.link_id as id',
      eb.fn.max('l.link').as('url'),
      sql<number>`sum(l.clicks)::int`.as('clicks'),
      sql<number>`count(*)::int`.as('unique_clicks'),
    ])
    .where('emails.broadcast_id', '=', broadcastId)
    .where('emails.org_id', '=', tenant.orgId)
    .where('emails.mode', '=', tenant.mode)
    .groupBy('l.link_id');
  return listPage(q, page, (rows) => rows, 'l.link_id');
}
