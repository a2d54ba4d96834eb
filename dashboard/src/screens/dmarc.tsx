import { get, type Schema } from '../api.ts';
import { LineChart } from '../components/line-chart.tsx';
import { Table } from '../components/paged-list.tsx';
import { Empty, Status, useLoad } from '../ui.tsx';

type ReportDay = Schema<'DmarcReportList'>['data'][number];

/** One day over every reporter: messages and how many passed. */
interface Day {
  day: string;
  messages: number;
  dmarc_pass: number;
  dkim_aligned: number;
  spf_aligned: number;
}

const SERIES = [
  ['dmarc_pass', 'DMARC pass', '#2563eb'],
  ['dkim_aligned', 'DKIM aligned', '#16a34a'],
  ['spf_aligned', 'SPF aligned', '#d97706'],
] as const;

const percent = (n: number, of: number) => (of > 0 ? Math.round((n / of) * 100) : 0);

/** The reporters' days summed per day, oldest first. */
function byDay(reports: ReportDay[]): Day[] {
  const days = new Map<string, Day>();
  for (const r of reports) {
    const d = days.get(r.day) ?? { day: r.day, messages: 0, dmarc_pass: 0, dkim_aligned: 0, spf_aligned: 0 };
    for (const k of ['messages', 'dmarc_pass', 'dkim_aligned', 'spf_aligned'] as const) d[k] += r[k];
    days.set(r.day, d);
  }
  return [...days.values()].sort((a, b) => a.day.localeCompare(b.day));
}

/** Senders that are not Postline, over every report: who else sends as the domain. */
function unknownSenders(reports: ReportDay[]) {
  const byIp = new Map<
    string,
    { ip: string; messages: number; dmarc_pass: number; reporters: Set<string> }
  >();
  for (const r of reports)
    for (const s of r.sources.filter((s) => !s.postline)) {
      const u = byIp.get(s.ip) ?? { ip: s.ip, messages: 0, dmarc_pass: 0, reporters: new Set<string>() };
      u.messages += s.messages;
      u.dmarc_pass += s.dmarc_pass;
      u.reporters.add(r.reporter);
      byIp.set(s.ip, u);
    }
  return [...byIp.values()].sort((a, b) => b.messages - a.messages);
}

/** Pass rates per day: a line per series, a dot per day (its rate in its title). */
function PassRateChart({ days }: { days: Day[] }) {
  const rows = days.map((d) => ({
    label: d.day,
    dmarc_pass: percent(d.dmarc_pass, d.messages),
    dkim_aligned: percent(d.dkim_aligned, d.messages),
    spf_aligned: percent(d.spf_aligned, d.messages),
  }));
  return (
    <LineChart
      id="dmarc-chart-title"
      title="DMARC, DKIM and SPF pass rates per day"
      rows={rows}
      series={SERIES}
      max={100}
      unit="%"
      class="dmarc-chart"
    />
  );
}

/** The domain's DMARC aggregate reports: pass rates over time, and the senders that are not Postline. */
export function DmarcReports({ domainId }: { domainId: string }) {
  const loaded = useLoad(
    () => get<Schema<'DmarcReportList'>>(`/domains/${encodeURIComponent(domainId)}/dmarc-reports`),
    [domainId],
  );
  const reports = loaded.data?.data;
  return (
    <section aria-labelledby="dmarc-heading">
      <h2 id="dmarc-heading">DMARC reports</h2>
      <Status loaded={loaded} what="the DMARC reports" />
      {reports &&
        (reports.length === 0 ? (
          <Empty>
            No DMARC reports yet. With inbound set up, the suggested DMARC record's <code>rua</code> brings
            the receivers' daily reports here.
          </Empty>
        ) : (
          <>
            <PassRateChart days={byDay(reports)} />
            <h3>Unknown senders</h3>
            <p class="muted">Addresses Postline does not send from that sent mail as this domain.</p>
            <Table
              items={unknownSenders(reports)}
              class="dmarc-unknown"
              columns={['Address', 'Messages', 'DMARC pass', 'Reported by']}
              empty="Every reported message came from Postline."
            >
              {(u) => (
                <tr key={u.ip} data-ip={u.ip}>
                  <td>
                    <code>{u.ip}</code>
                  </td>
                  <td>{u.messages}</td>
                  <td>{percent(u.dmarc_pass, u.messages)}%</td>
                  <td>{[...u.reporters].sort().join(', ')}</td>
                </tr>
              )}
            </Table>
          </>
        ))}
    </section>
  );
}
