import { get, listAll, type Schema } from '../api.ts';
import { LineChart } from '../components/line-chart.tsx';
import { Status, useLoad } from '../ui.tsx';
import type { EmailSummary } from './emails.tsx';

type Usage = Schema<'Usage'>;
type PlanTerms = Schema<'PlanTerms'>;
type Row = {
  day: string;
  sent: number;
  delivered: number;
  bounced: number;
  complained: number;
  opened: number;
};
const SERIES = [
  ['sent', 'Sent', '#6b7280'],
  ['delivered', 'Delivered', '#15803d'],
  ['bounced', 'Bounced', '#b91c1c'],
  ['complained', 'Complained', '#a16207'],
  ['opened', 'Opened', '#1d4ed8'],
] as const;
const DAYS = 30;
const MAX_PAGES = 20;

/** Per day (UTC) over the last 30 days, from the emails list: what was sent and how each email ended up. */
function perDay(emails: (EmailSummary & { last_event?: string })[], today: Date): Row[] {
  const rows: Row[] = [];
  const index = new Map<string, Row>();
  for (let i = DAYS - 1; i >= 0; i--) {
    const day = new Date(today.getTime() - i * 86_400_000).toISOString().slice(0, 10);
    const row = { day, sent: 0, delivered: 0, bounced: 0, complained: 0, opened: 0 };
    rows.push(row);
    index.set(day, row);
  }
  for (const e of emails) {
    const row = index.get(e.created_at.slice(0, 10));
    if (!row || ['scheduled', 'canceled', 'queued'].includes(e.status)) continue;
    row.sent++;
    if (e.status === 'delivered' || e.status === 'complained') row.delivered++;
    if (e.status === 'bounced') row.bounced++;
    if (e.status === 'complained') row.complained++;
    if (e.last_event === 'email.opened' || e.last_event === 'email.clicked') row.opened++;
  }
  return rows;
}

export function Overview() {
  const organization = useLoad(() => get<Schema<'Organization'>>('/organization'), []);
  const usage = useLoad(() => get<Usage>('/usage'), []);
  const stats = useLoad(async () => {
    const today = new Date();
    const since = new Date(today.getTime() - (DAYS - 1) * 86_400_000).toISOString().slice(0, 10);
    const list = await listAll<EmailSummary>('/emails', { from_date: `${since}T00:00:00Z` }, MAX_PAGES);
    return { rows: perDay(list.data, today), complete: list.complete, count: list.data.length };
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
            From the emails list{stats.data.complete ? '' : ` (the newest ${stats.data.count} only)`}, by each
            email's current status; opened counts emails whose last event was an open or a click.
          </p>
          <Totals rows={stats.data.rows} />
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

function Totals({ rows }: { rows: Row[] }) {
  return (
    <ul class="stats" aria-label="Totals over 30 days">
      {SERIES.map(([key, label]) => (
        <li key={key}>
          <strong>{rows.reduce((n, r) => n + r[key], 0)}</strong> {label.toLowerCase()}
        </li>
      ))}
    </ul>
  );
}
