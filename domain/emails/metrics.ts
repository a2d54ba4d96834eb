import { z } from 'zod';
import { zonedDateTime } from '../../platform/http/route-schema.ts';
import { idShape } from '../../platform/ids.ts';

/**
 * An organization's sending figures (`GET /v1/emails/metrics`, Resend's `emails.metrics`): the emails accepted
 * in a range, counted by what became of their recipients (docs/emails.md, "Metrics").
 */

/** What the read model counts for a group of emails; every metric is one of these or a ratio of two. */
export interface MetricCounts {
  /** Recipients accepted. */
  received: number;
  /** Recipients of the emails that left Postline (a broadcast's `counts.sent`). */
  sent: number;
  delivered: number;
  delivery_delayed: number;
  bounced: number;
  bounced_permanent: number;
  bounced_transient: number;
  complained: number;
  /** Addresses the suppression list left out. */
  suppressed: number;
  opened: number;
  unique_opened: number;
  clicked: number;
  unique_clicked: number;
  /** Emails whose unsubscribe link (its page, its mailto) took their recipient out of a topic or of everything. */
  unsubscribed: number;
  /** Emails with a recipient that got them: what the open and click rates are of. */
  emails_delivered: number;
}

const COUNTED = [
  'received',
  'sent',
  'delivered',
  'delivery_delayed',
  'bounced',
  'bounced_permanent',
  'bounced_transient',
  'complained',
  'suppressed',
  'opened',
  'unique_opened',
  'clicked',
  'unique_clicked',
  'unsubscribed',
] as const;
const RATES = [
  'delivery_rate',
  'bounce_rate',
  'complaint_rate',
  'open_rate',
  'click_rate',
  'unsubscribe_rate',
] as const;
export const EMAIL_METRICS = [...COUNTED, ...RATES] as const;
export type EmailMetric = (typeof EMAIL_METRICS)[number];

export const EMAIL_METRIC_DIMENSIONS = ['period', 'domain', 'broadcast'] as const;
export type EmailMetricDimension = (typeof EMAIL_METRIC_DIMENSIONS)[number];
export const GRANULARITIES = ['hourly', 'daily', 'weekly', 'monthly'] as const;
export type Granularity = (typeof GRANULARITIES)[number];

/** A share of a whole, to four places; none of nothing is 0. */
const ratio = (part: number, whole: number) =>
  whole === 0 ? 0 : Math.round((part / whole) * 10_000) / 10_000;

/** The metrics asked for, in the order of EMAIL_METRICS: counts as counted, rates of what they are a share of. */
export function metricValues(
  c: MetricCounts,
  wanted: readonly EmailMetric[],
): Partial<Record<EmailMetric, number>> {
  const rates: Record<(typeof RATES)[number], number> = {
    delivery_rate: ratio(c.delivered, c.sent),
    bounce_rate: ratio(c.bounced, c.sent),
    complaint_rate: ratio(c.complained, c.delivered),
    open_rate: ratio(c.unique_opened, c.emails_delivered),
    click_rate: ratio(c.unique_clicked, c.emails_delivered),
    // Of the recipients delivered, as the complaint rate: the two figures mailbox providers judge senders by.
    unsubscribe_rate: ratio(c.unsubscribed, c.delivered),
  };
  const all: Record<EmailMetric, number> = { ...c, ...rates };
  return Object.fromEntries(EMAIL_METRICS.filter((m) => wanted.includes(m)).map((m) => [m, all[m]]));
}

/** The counts of several groups together (a range's totals from its rows). */
export function sumCounts(rows: MetricCounts[]): MetricCounts {
  const total = Object.fromEntries(
    [...COUNTED, 'emails_delivered'].map((k) => [k, 0]),
  ) as unknown as MetricCounts;
  for (const row of rows) for (const k of Object.keys(total) as (keyof MetricCounts)[]) total[k] += row[k];
  return total;
}

/** A comma-separated list of names out of `names` (Resend's SDK joins its arrays so), each once. */
const listOf = <T extends string>(names: readonly T[], what: string) =>
  z
    .string()
    .transform((s) => s.split(',').map((x) => x.trim()))
    .pipe(
      z
        .array(z.enum(names as [T, ...T[]], { error: `must be ${what}: ${names.join(', ')}` }))
        .refine((list) => new Set(list).size === list.length, 'must name each once'),
    );

const ids = (prefix: string) =>
  z
    .string()
    .transform((s) => s.split(',').map((x) => x.trim()))
    .pipe(z.array(z.string().regex(idShape(prefix), `must be ids (${prefix}_…), comma-separated`)).max(100));

/** A day (`YYYY-MM-DD` of the years 0001 to 9999, in `timezone`) or an instant with its zone. */
const day = z.union([z.iso.date().refine((d) => !d.startsWith('0000')), zonedDateTime], {
  error: 'must be a date (YYYY-MM-DD) or an ISO 8601 date-time with a time zone',
});

export const emailMetricsQuery = z
  .object({
    start_date: day.optional(),
    end_date: day.optional(),
    timezone: z
      .string()
      .max(64)
      .refine(isTimeZone, 'must be an IANA time zone such as Europe/Berlin')
      .default('UTC'),
    granularity: z.enum(GRANULARITIES).default('daily'),
    metrics: listOf(EMAIL_METRICS, 'metrics').optional(),
    dimensions: listOf(EMAIL_METRIC_DIMENSIONS, 'dimensions').optional(),
    domain_id: ids('dom').optional(),
    email_id: ids('em').optional(),
    broadcast_id: ids('bc').optional(),
  })
  .strict();
export type EmailMetricsQuery = z.output<typeof emailMetricsQuery>;

/**
 * An IANA name (`Europe/Berlin`, `UTC`, `Etc/GMT-1`) that JavaScript knows. Not an offset (`+01:00`): PostgreSQL
 * reads those the POSIX way, east of Greenwich as negative, and the days would be counted in the opposite zone.
 */
function isTimeZone(zone: string): boolean {
  if (!/^[A-Za-z][\w+-]*(\/[\w+-]+)*$/.test(zone)) return false;
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The metrics asked for, each a number. */
const values = Object.fromEntries(EMAIL_METRICS.map((m) => [m, z.number().optional()]));

export const EmailMetrics = z
  .strictObject({
    object: z.literal('metrics'),
    start_date: z.string(),
    end_date: z.string(),
    timezone: z.string(),
    granularity: z.enum(GRANULARITIES),
    metrics: z.array(z.enum(EMAIL_METRICS)),
    dimensions: z.array(z.enum(EMAIL_METRIC_DIMENSIONS)),
    totals: z.strictObject(values),
    data: z
      .array(
        z.strictObject({
          period: z.string().optional().meta({ description: 'The start of the period, an instant in UTC.' }),
          domain_id: z.string().nullable().optional(),
          domain_name: z.string().optional(),
          broadcast_id: z.string().nullable().optional(),
          broadcast_name: z.string().nullable().optional(),
          ...values,
        }),
      )
      .optional()
      .meta({ description: 'One row per group of `dimensions`, when there are any.' }),
  })
  .meta({ id: 'EmailMetrics' });
