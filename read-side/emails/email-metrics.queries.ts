import type {
  EmailMetricDimension,
  EmailMetricsQuery,
  Granularity,
  MetricCounts,
} from '../../domain/emails/metrics.ts';
import { LEFT_POSTLINE_SQL } from '../../domain/emails/status.ts';
import type { Database } from '../../platform/db/database.ts';
import type { Tenant } from '../../platform/tenancy.ts';

/** The instants a metrics query covers, `end` excluded. */
export interface MetricsRange {
  start: Date;
  end: Date;
}

/**
 * The range of a metrics query as PostgreSQL reads it in `timezone`: a day starts at its midnight there and
 * `end_date` as a day includes it; without `end_date` the range ends `now`, without `start_date` it starts at the
 * midnight six days before its end (a week with the end's day).
 */
export async function metricsRange(db: Database, q: EmailMetricsQuery, now: Date): Promise<MetricsRange> {
  const {
    rows: [r],
  } = await db.query<MetricsRange>(
    `WITH e AS (
       SELECT CASE WHEN $2::text IS NULL THEN $4::timestamptz
                   WHEN $2 ~ '^\\d{4}-\\d{2}-\\d{2}$' THEN ($2::date + 1)::timestamp AT TIME ZONE $3
                   ELSE $2::timestamptz END AS "end")
     SELECT CASE WHEN $1::text IS NULL THEN date_trunc('day', e."end" - interval '6 days', $3)
                 WHEN $1 ~ '^\\d{4}-\\d{2}-\\d{2}$' THEN $1::date::timestamp AT TIME ZONE $3
                 ELSE $1::timestamptz END AS start, e."end"
     FROM e`,
    [q.start_date ?? null, q.end_date ?? null, q.timezone, now],
  );
  return r;
}

const UNIT: Record<Granularity, string> = { hourly: 'hour', daily: 'day', weekly: 'week', monthly: 'month' };

/** What each dimension groups by: its columns, and its select list (`$unit` and `$zone`: the period's). */
const GROUPS: Record<EmailMetricDimension, { columns: string[]; select: string }> = {
  period: { columns: ['period'], select: 'date_trunc($unit, e.created_at, $zone) AS period' },
  domain: { columns: ['domain_id', 'domain_name'], select: 'e.domain_id, e.domain_name' },
  broadcast: {
    columns: ['broadcast_id', 'broadcast_name'],
    select: 'e.broadcast_id, (SELECT b.name FROM broadcasts b WHERE b.id = e.broadcast_id) AS broadcast_name',
  },
};

export type MetricsRow = MetricCounts & {
  period?: Date;
  domain_id?: string | null;
  domain_name?: string;
  broadcast_id?: string | null;
  broadcast_name?: string | null;
};

/** Whether the email's unsubscribe link was used (projections/email-unsubscribes.projection.ts). */
const UNSUBSCRIBED = 'EXISTS (SELECT 1 FROM email_unsubscribes u WHERE u.email_id = e.id) AS unsubscribed_by';

/** The filters a query names: each a condition on the emails, its value a parameter. */
const FILTERS = { domain_id: 'e.domain_id', email_id: 'e.id', broadcast_id: 'e.broadcast_id' } as const;

/**
 * The counts of the tenant's emails accepted in the range, one row per group of `dimensions` (one row in all
 * without; none for no email): each email's recipients counted by their status, its opens and clicks as the read
 * model keeps them. The emails are found by `created_at` (a BRIN index: the rows come in about that order).
 */
export async function emailMetricRows(
  db: Database,
  { orgId, mode }: Tenant,
  q: EmailMetricsQuery,
  range: MetricsRange,
): Promise<MetricsRow[]> {
  const params: unknown[] = [orgId, mode, range.start, range.end];
  const param = (value: unknown) => `$${params.push(value)}`;
  const groups = (q.dimensions ?? []).map((d) => GROUPS[d]);
  const keys = groups.flatMap((g) => g.columns);
  const selects = groups.map((g) =>
    g.select.replace('$unit', () => param(UNIT[q.granularity])).replace('$zone', () => param(q.timezone)),
  );
  const filters = (Object.keys(FILTERS) as (keyof typeof FILTERS)[]).flatMap((f) =>
    q[f] ? [`AND ${FILTERS[f]} = ANY(${param(q[f])}::text[])`] : [],
  );
  const { rows } = await db.query<MetricsRow>(
    `WITH e AS (
       SELECT ${['e.status', 'e.opens', 'e.clicks', 'e.suppressed_recipients', 'r.*', UNSUBSCRIBED, ...selects].join(', ')}
       FROM emails e
       CROSS JOIN LATERAL (
         SELECT count(*) AS received,
           count(*) FILTER (WHERE x->>'status' IN ('delivered', 'complained')) AS delivered,
           count(*) FILTER (WHERE x->>'status' = 'delayed') AS delivery_delayed,
           count(*) FILTER (WHERE x->>'status' = 'bounced') AS bounced,
           count(*) FILTER (WHERE x->>'status' = 'bounced' AND x->>'bounce_type' = 'hard') AS bounced_permanent,
           count(*) FILTER (WHERE x->>'status' = 'bounced' AND x->>'bounce_type' = 'soft') AS bounced_transient,
           count(*) FILTER (WHERE x->>'status' = 'complained') AS complained
         FROM jsonb_array_elements(e.recipients) x
       ) r
       WHERE e.org_id = $1 AND e.mode = $2 AND e.created_at >= $3 AND e.created_at < $4 ${filters.join(' ')}
     )
     SELECT ${[...keys, ''].join(', ')}
       sum(received)::int AS received,
       coalesce(sum(received) FILTER (WHERE status IN (${LEFT_POSTLINE_SQL})), 0)::int AS sent,
       sum(delivered)::int AS delivered, sum(delivery_delayed)::int AS delivery_delayed,
       sum(bounced)::int AS bounced, sum(bounced_permanent)::int AS bounced_permanent,
       sum(bounced_transient)::int AS bounced_transient, sum(complained)::int AS complained,
       sum(json_array_length(suppressed_recipients))::int AS suppressed,
       sum(opens)::int AS opened, (count(*) FILTER (WHERE opens > 0))::int AS unique_opened,
       sum(clicks)::int AS clicked, (count(*) FILTER (WHERE clicks > 0))::int AS unique_clicked,
       (count(*) FILTER (WHERE unsubscribed_by))::int AS unsubscribed,
       (count(*) FILTER (WHERE delivered > 0))::int AS emails_delivered
     FROM e
     ${keys.length ? `GROUP BY ${keys.join(', ')} ORDER BY ${keys.join(', ')}` : 'HAVING count(*) > 0'}`,
    params,
  );
  return rows;
}
