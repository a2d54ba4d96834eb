import { type DmarcReportEvent, dmarcReportKey } from '../domain/dmarc/dmarc-report.events.ts';
import type { DmarcRecord } from '../domain/dmarc/dmarc-report.ts';
import type { DomainEvent } from '../domain/domains/domain.events.ts';
import type { Projection } from './projection.ts';
import { insertRow } from './rows.ts';

const dmarcPassed = (r: DmarcRecord) => r.dkimAligned || r.spfAligned;
const sum = (records: DmarcRecord[], passed: (r: DmarcRecord) => boolean = () => true) =>
  records.reduce((n, r) => n + (passed(r) ? r.count : 0), 0);

/** A report's records by source IP (a reporter may give one IP several rows: per envelope or header domain). */
function sourcesOf(records: DmarcRecord[]) {
  const byIp = new Map<string, DmarcRecord[]>();
  for (const r of records) byIp.set(r.sourceIp, [...(byIp.get(r.sourceIp) ?? []), r]);
  return [...byIp].map(([ip, rows]) => ({
    ip,
    messages: sum(rows),
    dmarc_pass: sum(rows, dmarcPassed),
    dkim_aligned: sum(rows, (r) => r.dkimAligned),
    spf_aligned: sum(rows, (r) => r.spfAligned),
  }));
}

type Purged = Extract<DomainEvent, { type: 'DomainPurged' }>;

/**
 * DMARC aggregate reports per domain, each with its counts and sources: `GET /v1/domains/{id}/dmarc-reports`.
 * A purged domain's reports go with it.
 */
export const dmarcReportsProjection: Projection<DmarcReportEvent | Purged> = {
  name: 'dmarc_reports',
  tables: ['dmarc_reports', 'dmarc_report_sources'],
  types: ['DmarcReportReceived', 'DomainPurged'],
  async apply(tx, e) {
    if (e.type === 'DomainPurged') {
      await tx.query('DELETE FROM dmarc_report_sources WHERE domain_id = $1', [e.data.domainId]);
      await tx.query('DELETE FROM dmarc_reports WHERE domain_id = $1', [e.data.domainId]);
      return;
    }
    if (e.type !== 'DmarcReportReceived') return;
    const { report, ...d } = e.data;
    const records = report.records;
    const id = `${d.domainId}|${dmarcReportKey(report)}`;
    const day = report.begin.slice(0, 10);
    for (const source of sourcesOf(records))
      await insertRow(tx, 'dmarc_report_sources', {
        id: `${id}|${source.ip}`,
        report_row_id: id,
        org_id: d.orgId,
        mode: d.mode,
        domain_id: d.domainId,
        day,
        ...source,
      });
    return insertRow(tx, 'dmarc_reports', {
      id,
      org_id: d.orgId,
      mode: d.mode,
      domain_id: d.domainId,
      reporter: report.reporter,
      reporter_email: report.reporterEmail,
      report_id: report.reportId,
      day,
      begin_at: report.begin,
      end_at: report.end,
      policy: report.policy,
      messages: sum(records),
      dmarc_pass: sum(records, dmarcPassed),
      dkim_pass: sum(records, (r) => r.dkimPass),
      dkim_aligned: sum(records, (r) => r.dkimAligned),
      spf_pass: sum(records, (r) => r.spfPass),
      spf_aligned: sum(records, (r) => r.spfAligned),
      received_at: d.receivedAt,
    });
  },
};
