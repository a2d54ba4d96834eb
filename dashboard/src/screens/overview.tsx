import { get, query, type Schema } from '../api.ts';
import { LineChart } from '../components/line-chart.tsx';
import { Status, useLoad } from '../ui.tsx';

type Usage = Schema<'Usage'>;
type PlanTerms = Schema<'PlanTerms'>;
type Metrics = Schema<'EmailMetrics'>;
type Key = 'sent' | 'delivered' | 'bounced' | 'complained' | 'unique_opened';
type Row = { day: string } & Record<Key, number>;
const SERIES = [
  ['sent', 'Sent', '#6b7280'],
  ['delivered', 'Delivered', '#15803d'],
  ['bounced', 'Bounced', '#b91c1c'],
  ['complained', 'Complained', '#a16207'],
  ['unique_opened', 'Opened', '#1d4ed8'],
] as const;
const RATES = [
  ['delivery_rate', 'delivered'],
  ['bounce_rate', 'bounced'],
  ['complaint_rate', 'complained'],
  ['unsubscribe_rate', 'unsubscribed'],
] as const;
const DAYS = 30;

/** A day in the browser's time zone, `YYYY-MM-DD`. */
const localDay = (d: Date) => d.toLocaleDateString('en-CA');

/** Each of the 30 days up to today (the browser's days), with the figures of its period, if any. */
function perDay(metrics: Metrics, today: Date): Row[] {
  const byDay = new Map((metrics.data ?? []).map((r) => [localDay(new Date(r.period!)), r]));
  return Array.from({ length: DAYS }, (_, i) => {
    const day = localDay(new Date(today.getFullYear(), today.getMonth(), today.getDate() - (DAYS - 1 - i)));
    const r = byDay.get(day);
    return { day, ...Object.fromEntries(SERIES.map(([k]) => [k, r?.[k] ?? 0])) } as Row;
  });
}

export function Overview() {
  const organization = useLoad(() => get<Schema<'Organization'>>('/organization'), []);
  const usage = useLoad(() => get<Usage>('/usage'), []);
  const stats = useLoad(async () => {
    const today = new Date();
    const first = new Date(today.getFullYear(), today.getMonth(), today.getDate() - (DAYS - 1));
    const metrics = await get<Metrics>(
      `/emails/metrics${query({
        start_date: localDay(first),
        end_date: localDay(today),
        timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
        dimensions: 'period',
        metrics: [...SERIES.map(([k]) => k), ...RATES.map(([k]) => k)].join(','),
      })}`,
    );
    return { rows: perDay(metrics, today), totals: metrics.totals };
  }, []);
  return (
    <section>
      <h1>Overview</h1>
      <h2>Plan</h2>
      <Status loaded={organization} what="plan" />
      {organization.data && <Plan plan={organization.data.plan} />}
      <h2>Quota this month</h2>
      <Status loaded={usage} what="usage" />
      {usage.data && <Quota usage={usage.data} />}
      <h2>Last 30 days</h2>
      <Status loaded={stats} what="statistics" />
      {stats.data && (
        <>
          <Chart rows={stats.data.rows} />
          <p class="muted">
            The recipients of the emails accepted each day, by what has become of them so far; opened: the
            emails opened at least once.
          </p>
          <Totals totals={stats.data.totals} />
        </>
      )}
    </section>
  );
}

const euros = (amount: number) => `€${Number.isInteger(amount) ? amount : amount.toFixed(2)}`;
const capitalised = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** The organization's plan: what it costs a month and what it includes. */
function Plan({ plan }: { plan: PlanTerms }) {
  const { limits, overage } = plan;
  const limit = (n: number | null) => (n === null ? 'Unlimited' : n.toLocaleString());
  return (
    <div class="plan">
      <p>
        <strong>{capitalised(plan.name)}</strong> plan · {euros(plan.price.amount)} a month
      </p>
      <ul class="stats" aria-label="What the plan includes">
        <li>
          <strong>{limit(limits.emails_per_month)}</strong> emails a month,{' '}
          {overage
            ? `then ${euros(overage.amount)} per ${overage.per_emails.toLocaleString()}`
            : 'then refused'}
        </li>
        <li>
          <strong>{limit(limits.domains)}</strong> domains
        </li>
        <li>
          <strong>{limit(limits.templates)}</strong> templates
        </li>
        <li>
          <strong>{limit(limits.webhook_endpoints)}</strong> webhook endpoints
        </li>
      </ul>
    </div>
  );
}

function Quota({ usage }: { usage: Usage }) {
  const pct = usage.included > 0 ? Math.min(100, Math.round((usage.emails / usage.included) * 100)) : 0;
  return (
    <div class="quota">
      <p>
        <strong>{usage.emails.toLocaleString()}</strong> of {usage.included.toLocaleString()} emails in{' '}
        {usage.month} ({usage.plan} plan, {usage.mode} mode)
        {usage.overage > 0 && (
          <>
            {' '}
            · overage {usage.overage.toLocaleString()}
            {usage.overage_cost_eur !== null && ` (€${usage.overage_cost_eur.toFixed(2)})`}
          </>
        )}
      </p>
      <meter class="meter" min={0} max={100} value={pct} aria-label="Share of the monthly quota used">
        {pct}%
      </meter>
    </div>
  );
}

/** A line per series over the 30 days. */
function Chart({ rows }: { rows: Row[] }) {
  const max = Math.max(1, ...rows.flatMap((r) => SERIES.map(([k]) => r[k])));
  return (
    <LineChart
      id="chart-title"
      title="Emails per day over the last 30 days"
      rows={rows.map((r) => ({ ...r, label: r.day.slice(5) }))}
      series={SERIES}
      max={max}
    />
  );
}

const percent = (share: number | undefined) => `${((share ?? 0) * 100).toFixed(1)}%`;

/** The 30 days' totals, and the rates mailbox providers judge a sender by. */
function Totals({ totals }: { totals: Metrics['totals'] }) {
  return (
    <ul class="stats" aria-label="Totals over 30 days">
      {SERIES.map(([key, label]) => (
        <li key={key}>
          <strong>{totals[key] ?? 0}</strong> {label.toLowerCase()}
        </li>
      ))}
      {RATES.map(([key, label]) => (
        <li key={key}>
          <strong>{percent(totals[key])}</strong> {label}
        </li>
      ))}
    </ul>
  );
}
