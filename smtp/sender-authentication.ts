import type { Readable } from 'node:stream';
import { authenticate } from 'mailauth';
import type { Authentication, AuthVerdict } from '../domain/received-emails/received-email.events.ts';
import { createResolver, type MailauthResolver, mailauthResolver } from '../platform/dns.ts';
import type { Logger } from '../platform/logger.ts';
import { storableText } from '../platform/storable-text.ts';
import { keptAnswers } from './dns-answers.ts';

const verdict = (result: string, detail?: string | null): AuthVerdict => ({
  result,
  detail: detail ? storableText(detail, 500) : null,
});
const none = verdict('none');

/**
 * SPF, DKIM, DMARC and ARC for a message that arrived at the MX, with mailauth: SPF from the client's address,
 * HELO and MAIL FROM; DKIM from the signatures; DMARC from both and the From domain. Lookups go to DNS_SERVERS,
 * through one resolver for every message, their answers kept briefly (dns-answers.ts). A check that cannot be done
 * (DNS away, a bug) is `temperror`: the message is taken all the same.
 */
export function inboundAuthenticator(dnsServers: string[], hostname: string, log: Logger) {
  const resolver = keptAnswers(mailauthResolver(createResolver(dnsServers, { timeout: 2000, tries: 1 })));
  return (raw: Readable, arrival: { ip: string; helo: string; mailFrom: string }) =>
    authenticateArrival(raw, { ...arrival, hostname, resolver }, log);
}

async function authenticateArrival(
  raw: Readable,
  arrival: { ip: string; helo: string; mailFrom: string; hostname: string; resolver: MailauthResolver },
  log: Logger,
): Promise<Authentication> {
  try {
    const r = await authenticate(raw, {
      ip: arrival.ip,
      helo: arrival.helo,
      sender: arrival.mailFrom,
      mta: arrival.hostname,
      resolver: arrival.resolver,
      disableBimi: true,
      // RFC 8301 §3.1: verifiers must not consider rsa-sha1 signatures valid (`policy`, not counted for DMARC).
      rejectRsaSha1: true,
    });
    const signatures = r.dkim.results ?? [];
    const dkim = signatures.find((s) => s.status.result === 'pass') ?? signatures[0];
    return {
      spf: r.spf ? verdict(r.spf.status.result, r.spf.status.comment) : none,
      dkim: dkim
        ? verdict(
            dkim.status.result,
            [`d=${dkim.signingDomain}`, dkim.status.comment].filter(Boolean).join('; '),
          )
        : none,
      dmarc: r.dmarc ? verdict(r.dmarc.status.result, `p=${r.dmarc.policy} d=${r.dmarc.domain}`) : none,
      arc: r.arc ? verdict(r.arc.status.result, r.arc.status.comment) : none,
    };
  } catch (err) {
    raw.destroy(); // what the checks left unread
    log.warn({ err }, 'inbound authentication failed');
    const failed = verdict('temperror', 'the checks could not be made');
    return { spf: failed, dkim: failed, dmarc: failed, arc: failed };
  }
}
