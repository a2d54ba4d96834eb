import { gzipSync } from 'node:zlib';
import MimeNode from 'nodemailer/lib/mime-node';
import { tlsReportFilename, tlsReportSubject } from '../../../domain/delivery/tls-report.ts';
import type { DkimKey, OutboundMessage } from '../mta/message.ts';

export interface ReportToSend {
  day: string;
  domain: string;
  submitter: string;
  reportId: string;
  /** The report JSON (buildTlsReport). */
  report: Record<string, unknown>;
}

/** The report as RFC 8460 §5.1 sends it: its JSON, gzip-compressed. */
export const gzippedReport = (r: ReportToSend): Buffer => gzipSync(JSON.stringify(r.report));

/**
 * The report mail (RFC 8460 §5.3): multipart/report with report-type tlsrpt, a short text part, and the gzip JSON
 * as an application/tlsrpt+gzip attachment; TLS-Report-Domain and TLS-Report-Submitter headers, and the subject
 * the RFC gives. Signed with `dkim` when the operator configured a key (TLSRPT_DKIM_KEY_FILE), else unsigned.
 */
export async function reportMessage(
  r: ReportToSend,
  from: string,
  to: string,
  dkim: DkimKey | null = null,
): Promise<OutboundMessage> {
  const date = new Date();
  const messageId = `<${r.reportId}>`;
  const root = new MimeNode('multipart/report; report-type="tlsrpt"');
  root.setHeader({
    From: from,
    To: to,
    Subject: tlsReportSubject(r.domain, r.submitter, r.reportId),
    Date: date.toUTCString(),
    'Message-ID': messageId,
    'TLS-Report-Domain': r.domain,
    'TLS-Report-Submitter': r.submitter,
  });
  root
    .createChild('text/plain; charset=utf-8')
    .setContent(
      `This is an aggregate TLS report from ${r.submitter} for ${r.domain} on ${r.day} (RFC 8460).\n`,
    );
  root
    .createChild('application/tlsrpt+gzip')
    .setHeader(
      'Content-Disposition',
      `attachment; filename="${tlsReportFilename(r.submitter, r.domain, r.day, r.reportId)}"`,
    )
    .setContent(gzippedReport(r));
  const raw = await new Promise<Buffer>((resolve, reject) =>
    root.build((err, built) => (err ? reject(err) : resolve(built))),
  );
  return {
    from,
    to: [to],
    cc: [],
    bcc: [],
    replyTo: [],
    subject: tlsReportSubject(r.domain, r.submitter, r.reportId),
    headers: {},
    messageId,
    date,
    attachments: [],
    raw,
    envelopeFrom: from,
    dkim,
  };
}
