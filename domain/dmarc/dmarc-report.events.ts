import type { Mode } from '../../platform/eventstore/types.ts';
import type { DmarcReport } from './dmarc-report.ts';

/** A sending domain's DMARC aggregate reports, each as its summary (the XML is not kept). */
export type DmarcReportEvent = {
  type: 'DmarcReportReceived';
  data: {
    domainId: string;
    orgId: string;
    mode: Mode;
    receivedAt: string;
    report: DmarcReport;
  };
};

export const dmarcReportStream = (domainId: string) => `dmarc-${domainId}`;

/** A report is one reporter's report id: a reporter sending it again sends the same report. */
export const dmarcReportKey = (r: Pick<DmarcReport, 'reporter' | 'reportId'>) =>
  `${r.reporter.toLowerCase()}|${r.reportId}`;

/**
 * The `rua` address of a domain's DMARC record: `dmarc+<domain id>@<installation's bounce domain>` (the MX host).
 * The id names the domain whatever organization has it; the MX takes reports only there.
 */
export const dmarcReportAddress = (domainId: string, bounceDomain: string) =>
  `dmarc+${domainId}@${bounceDomain}`;

/** The domain id of a `rua` address, or null when the address is not one (its domain is checked apart). */
export function dmarcDomainIdOf(address: string): string | null {
  const local = address.slice(0, address.lastIndexOf('@')).toLowerCase();
  const id = /^dmarc\+([a-z0-9_-]{1,64})$/.exec(local)?.[1];
  return id ?? null;
}

/** A report is about the domain when its published policy is the domain's or a subdomain's. */
export const reportIsAbout = (reportDomain: string, domainName: string) =>
  reportDomain === domainName || reportDomain.endsWith(`.${domainName}`);
