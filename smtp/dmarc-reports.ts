import { buffer } from 'node:stream/consumers';
import { simpleParser } from 'mailparser';
import { dmarcDomainIdOf, reportIsAbout } from '../domain/dmarc/dmarc-report.events.ts';
import { parseDmarcReport } from '../domain/dmarc/dmarc-report.ts';
import { unpackReport } from '../domain/dmarc/report-archive.ts';
import { installationBounceDomain } from '../domain/domains/dns-records.ts';
import { domainOf } from '../domain/emails/addresses.ts';
import type { Services } from '../platform/services.ts';
import { findDmarcDomain } from '../read-side/dmarc-reports/dmarc-reports.queries.ts';
import { recordDmarcReport } from '../write-side/dmarc-reports/dmarc-report.commands.ts';
import type { SpooledMessage } from './mx-message.ts';
import type { ReplyName } from './replies.ts';
import type { SmtpServers } from './smtp-server.ts';

/** Attachments read as reports in one message: a reporter sends one. */
const MAX_ATTACHMENTS = 5;

/**
 * DMARC aggregate reports (docs/deliverability.md, "DMARC reports"): mail to a domain's `rua` address,
 * `dmarc+<domain id>@<bounce domain>`, is read for its report (zip, gzip or XML, as an attachment or as the body)
 * and recorded on the domain. A report that cannot be read, or is about another domain, is logged and dropped:
 * the reporter is answered 250 all the same, as it would only send it again.
 */
export function dmarcReports(servers: SmtpServers, services: Services) {
  const bounceDomain = installationBounceDomain(services.config);

  /** Only on the bounce domain: `dmarc+…@` a customer's inbound domain is that customer's mail. */
  const takes = (address: string) =>
    dmarcDomainIdOf(address) !== null && domainOf(address.toLowerCase()) === bounceDomain;

  async function domainOfAddress(address: string) {
    const id = dmarcDomainIdOf(address);
    return id && takes(address) ? findDmarcDomain(services.db, id) : null;
  }

  async function reportsIn(message: Buffer) {
    const parsed = await simpleParser(message, { skipHtmlToText: true, skipTextToHtml: true });
    const parts = parsed.attachments.slice(0, MAX_ATTACHMENTS).map((a) => a.content);
    const found = [];
    for (const part of parts) {
      try {
        found.push(parseDmarcReport(unpackReport(part)));
      } catch (error) {
        servers.log.warn({ err: (error as Error).message }, 'MX DMARC report not read');
      }
    }
    return found;
  }

  return {
    takes,

    async refusal(address: string): Promise<ReplyName | null> {
      return (await domainOfAddress(address)) ? null : 'unknownDmarcDomain';
    },

    /** Records each report about the addresses' domains; the message itself is not kept. */
    async deliver({ blob }: SpooledMessage, addresses: string[]): Promise<boolean> {
      const reports = await reportsIn(await buffer(blob.reader())).catch((error: Error) => {
        servers.log.warn({ err: error.message }, 'MX DMARC report message not read');
        return [];
      });
      for (const address of addresses) {
        const domain = await domainOfAddress(address);
        if (!domain) continue;
        for (const report of reports) {
          if (!reportIsAbout(report.domain, domain.name)) {
            servers.log.warn(
              { domainId: domain.id, about: report.domain },
              'MX DMARC report about another domain',
            );
            continue;
          }
          const recorded = await recordDmarcReport(services, domain, report, 'mx');
          servers.log.info({ domainId: domain.id, reporter: report.reporter, recorded }, 'MX DMARC report');
        }
      }
      return false;
    },
  };
}
