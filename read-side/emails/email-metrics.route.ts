import {
  EMAIL_METRICS,
  EmailMetrics,
  emailMetricsQuery,
  metricValues,
  sumCounts,
} from '../../domain/emails/metrics.ts';
import { invalidField } from '../../platform/errors.ts';
import type { queryRoutes } from '../../platform/http/query-routes.ts';
import { parse } from '../../platform/http/validate.ts';
import type { Services } from '../../platform/services.ts';
import { emailMetricRows, metricsRange } from './email-metrics.queries.ts';

const DAY = 86_400_000;
/** At most a year a query, and hourly figures for at most a month: a bounded number of rows and a bounded scan. */
const MAX_DAYS = 366;
const MAX_HOURLY_DAYS = 31;

/** A zone JavaScript knows and PostgreSQL does not (an old alias): its own 422, not a 500. */
function unknownZone(error: unknown): never {
  const pg = error as { code?: string; message?: string };
  if (pg.code === '22023' && /time zone/.test(pg.message ?? ''))
    throw invalidField('timezone', 'is not a time zone the database knows: give its current IANA name');
  throw error;
}

/** `GET /v1/emails/metrics`: the tenant's sending figures over a range (docs/emails.md, "Metrics"). */
export function emailMetricsRoute(emails: ReturnType<typeof queryRoutes>, services: Services) {
  emails.get(
    '/emails/metrics',
    {
      summary: 'Sending figures: the emails of a range by what became of their recipients',
      query: emailMetricsQuery,
      responses: { 200: EmailMetrics },
    },
    async (req) => {
      const q = parse(emailMetricsQuery, req.query, 'query');
      const range = await metricsRange(services.db, q, services.clock.now()).catch(unknownZone);
      const days = (range.end.getTime() - range.start.getTime()) / DAY;
      if (days <= 0) throw invalidField('start_date', 'must be before end_date');
      if (days > MAX_DAYS)
        throw invalidField('end_date', `must be at most ${MAX_DAYS} days after start_date`);
      if (q.granularity === 'hourly' && days > MAX_HOURLY_DAYS)
        throw invalidField('granularity', `hourly covers at most ${MAX_HOURLY_DAYS} days`);
      const metrics = q.metrics ?? [...EMAIL_METRICS];
      const dimensions = q.dimensions ?? [];
      const rows = await emailMetricRows(services.db, req.auth, q, range).catch(unknownZone);
      return {
        object: 'metrics',
        start_date: range.start.toISOString(),
        end_date: range.end.toISOString(),
        timezone: q.timezone,
        granularity: q.granularity,
        metrics,
        dimensions,
        totals: metricValues(sumCounts(rows), metrics),
        ...(dimensions.length > 0 && {
          data: rows.map((r) => ({
            ...(r.period && { period: r.period.toISOString() }),
            ...(dimensions.includes('domain') && { domain_id: r.domain_id, domain_name: r.domain_name }),
            ...(dimensions.includes('broadcast') && {
              broadcast_id: r.broadcast_id,
              broadcast_name: r.broadcast_name,
            }),
            ...metricValues(r, metrics),
          })),
        }),
      };
    },
  );
}
