/**
 * SMTP TLS Reporting (RFC 8460): the `_smtp._tls` TXT record and the daily report built from session counts.
 * Pure: counting, sending and scheduling are in processes/delivery/mta-sts/.
 */

/** RFC 8460 §4.3 result types this MTA records (no DANE: it validates no TLSA records). */
export type TlsResultType =
  | 'starttls-not-supported'
  | 'certificate-host-mismatch'
  | 'certificate-expired'
  | 'certificate-not-trusted'
  | 'validation-failure'
  | 'sts-policy-fetch-error'
  | 'sts-policy-invalid'
  | 'sts-webpki-invalid';

/** Sessions of one day to one policy domain under one policy, that succeeded or failed alike at one MX host. */
export interface TlsCount {
  policyType: 'sts' | 'no-policy-found';
  /** The policy text as served ('' without a policy). */
  policyText: string;
  /** The policy's `mx` patterns. */
  mxPatterns: string[];
  /** null: the sessions succeeded. */
  resultType: TlsResultType | null;
  /** The MX host the sessions went to ('' when none was tried, e.g. the policy could not be fetched). */
  receivingMx: string;
  sessions: number;
}

export type ReportUri = { kind: 'mailto'; address: string } | { kind: 'https'; url: string };

/**
 * The `rua` URIs of a `_smtp._tls` TXT record set (each record's strings joined): exactly one record starting
 * `v=TLSRPTv1` (RFC 8460 §3), its `rua` a comma-separated list of `mailto:` and `https:` URIs. Others are ignored.
 */
export function parseTlsRptRecord(records: string[][]): ReportUri[] {
  const rpt = records.map((r) => r.join('')).filter((r) => /^v=TLSRPTv1\s*(;|$)/.test(r));
  if (rpt.length !== 1) return [];
  const rua = rpt[0]
    .split(';')
    .map((f) => f.trim().match(/^rua=(.*)$/))
    .find((m) => m)?.[1];
  if (!rua) return [];
  return rua.split(',').flatMap((raw): ReportUri[] => {
    const uri = raw.trim();
    if (/^mailto:/i.test(uri)) {
      const address = decodeURIComponent(uri.slice(7).split('?')[0]);
      return /^[^@\s]+@[^@\s]+$/.test(address) ? [{ kind: 'mailto', address }] : [];
    }
    return /^https:\/\/[^\s]+$/i.test(uri) ? [{ kind: 'https', url: uri }] : [];
  });
}

export interface TlsReportInput {
  /** UTC day, `YYYY-MM-DD`. */
  day: string;
  policyDomain: string;
  organizationName: string;
  contactInfo: string;
  reportId: string;
  counts: TlsCount[];
}

/** The report JSON (RFC 8460 §4): one `policies` entry per policy seen that day, its summary and failures. */
export function buildTlsReport(input: TlsReportInput): Record<string, unknown> {
  const byPolicy = new Map<string, TlsCount[]>();
  for (const c of input.counts) {
    const key = `${c.policyType}\n${c.policyText}`;
    byPolicy.set(key, [...(byPolicy.get(key) ?? []), c]);
  }
  return {
    'organization-name': input.organizationName,
    'date-range': {
      'start-datetime': `${input.day}T00:00:00Z`,
      'end-datetime': `${input.day}T23:59:59Z`,
    },
    'contact-info': input.contactInfo,
    'report-id': input.reportId,
    policies: [...byPolicy.values()].map((counts) => policyEntry(input.policyDomain, counts)),
  };
}

function policyEntry(policyDomain: string, counts: TlsCount[]): Record<string, unknown> {
  const { policyType, policyText, mxPatterns } = counts[0];
  const sum = (list: TlsCount[]) => list.reduce((n, c) => n + c.sessions, 0);
  const failures = counts.filter((c) => c.resultType !== null);
  return {
    policy: {
      'policy-type': policyType,
      ...(policyType === 'sts' && {
        'policy-string': policyText.split(/\r?\n/).filter((l) => l.trim() !== ''),
        'mx-host': mxPatterns,
      }),
      'policy-domain': policyDomain,
    },
    summary: {
      'total-successful-session-count': sum(counts.filter((c) => c.resultType === null)),
      'total-failure-session-count': sum(failures),
    },
    'failure-details': failures.map((c) => ({
      'result-type': c.resultType,
      ...(c.receivingMx && { 'receiving-mx-hostname': c.receivingMx }),
      'failed-session-count': c.sessions,
    })),
  };
}

/** RFC 8460 §5.3: the report mail's subject. */
export const tlsReportSubject = (domain: string, submitter: string, reportId: string): string =>
  `Report Domain: ${domain} Submitter: ${submitter} Report-ID: <${reportId}>`;

/** RFC 8460 §5.1: the attachment's file name, `submitter!policy-domain!begin!end!id.json.gz`. */
export const tlsReportFilename = (
  submitter: string,
  domain: string,
  day: string,
  reportId: string,
): string => {
  const begin = Date.parse(`${day}T00:00:00Z`) / 1000;
  return `${submitter}!${domain}!${begin}!${begin + 86_399}!${reportId.replace(/[^A-Za-z0-9.-]/g, '-')}.json.gz`;
};
