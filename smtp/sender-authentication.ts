import type { Readable } from 'node:stream';
import type { AuthenticateResult } from 'mailauth';
import type { Authentication, AuthVerdict } from '../domain/received-emails/received-email.events.ts';
import { createResolver, type MailauthResolver, mailauthResolver } from '../platform/dns.ts';
import type { Logger } from '../platform/logger.ts';
import { storableText } from '../platform/storable-text.ts';
import { withDkimSignaturesCapped } from './dkim-signature-cap.ts';
import { keptAnswers } from './dns-answers.ts';

const verdict = (result: string, detail?: string | null): AuthVerdict => ({
  result,
  detail: detail ? storableText(detail, 500) : null,
});
const none = verdict('none');

/**
 * How long one message's checks may take. Each look-up waits up to 2 s and mailauth makes them one after the
 * other (a key for each signature, an ARC chain's seals, SPF's includes): a sender's DNS that does not answer
 * would otherwise hold the message for minutes.
 */
const AUTHENTICATION_DEADLINE_MS = 30_000;

/**
 * mailauth, loaded when the first message arrives rather than with the service's modules: it is an eighth of the
 * CPU a start takes, and only received mail needs it.
 */
let mailauth: Promise<typeof import('mailauth')> | undefined;
const loadMailauth = () => (mailauth ??= import('mailauth'));

/**
 * SPF, DKIM, DMARC and ARC for a message that arrived at the MX, with mailauth: SPF from the client's address,
 * HELO and MAIL FROM; DKIM from the first signatures (dkim-signature-cap.ts); DMARC from both and the From domain.
 * Lookups go to DNS_SERVERS, through one resolver for every message, their answers kept briefly (dns-answers.ts).
 * A check that cannot be done (DNS away, past the deadline, a bug) is `temperror`: the message is taken all the
 * same.
 */
export function inboundAuthenticator(
  dnsServers: string[],
  hostname: string,
  log: Logger,
  deadlineMs = AUTHENTICATION_DEADLINE_MS,
) {
  const resolver = keptAnswers(mailauthResolver(createResolver(dnsServers, { timeout: 2000, tries: 1 })));
  return (raw: Readable, arrival: { ip: string; helo: string; mailFrom: string }) =>
    authenticateArrival(raw, { ...arrival, hostname, resolver }, log, deadlineMs);
}

/** Every check `temperror`, for why. */
const unmade = (why: string): Authentication => {
  const failed = verdict('temperror', why);
  return { spf: failed, dkim: failed, dmarc: failed, arc: failed };
};

async function authenticateArrival(
  raw: Readable,
  arrival: { ip: string; helo: string; mailFrom: string; hostname: string; resolver: MailauthResolver },
  log: Logger,
  deadlineMs: number,
): Promise<Authentication> {
  const message = withDkimSignaturesCapped(raw);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), deadlineMs);
  });
  try {
    const { authenticate } = await loadMailauth();
    const checks = authenticate(message, {
      ip: arrival.ip,
      helo: arrival.helo,
      sender: arrival.mailFrom,
      mta: arrival.hostname,
      resolver: arrival.resolver,
      disableBimi: true,
      // RFC 8301 §3.1: verifiers must not consider rsa-sha1 signatures valid (`policy`, not counted for DMARC).
      rejectRsaSha1: true,
    });
    checks.catch(() => {}); // settled after the deadline, by then unheard
    const r = await Promise.race([checks, late]);
    if (r === 'late') {
      message.destroy(); // and `raw` with it, what the checks left unread
      log.warn({ deadlineMs }, 'inbound authentication did not finish in time');
      return unmade(`the checks did not finish within ${deadlineMs / 1000} s`);
    }
    return verdictsOf(r);
  } catch (err) {
    message.destroy();
    log.warn({ err }, 'inbound authentication failed');
    return unmade('the checks could not be made');
  } finally {
    clearTimeout(timer);
  }
}

/** What a passing signature whose `l=` is shorter than the body leaves unsigned, for a verdict's detail. */
const unsigned = (bytes: number | undefined) =>
  bytes ? `${bytes} bytes of the body unsigned (l=)` : undefined;
const details = (...parts: (string | undefined)[]) => parts.filter(Boolean).join('; ');

/**
 * The verdicts Postline keeps of mailauth's results. DKIM: a passing signature, one that covers the whole body
 * first, else the first signature. Anyone may append to a message whose signature has an `l=`, and DKIM and DMARC
 * still pass: both details say how much of the body was not signed.
 */
function verdictsOf(r: AuthenticateResult): Authentication {
  const signatures = r.dkim.results ?? [];
  const passed = signatures.filter((s) => s.status.result === 'pass');
  const dkim = passed.find((s) => !s.status.underSized) ?? passed[0] ?? signatures[0];
  const dmarc = r.dmarc || undefined;
  // A DMARC pass that rests on a DKIM signature alone (no aligned SPF).
  const onDkimAlone = dmarc?.status.result === 'pass' && !dmarc.alignment?.spf?.result;
  return {
    spf: r.spf ? verdict(r.spf.status.result, r.spf.status.comment) : none,
    dkim: dkim
      ? verdict(
          dkim.status.result,
          details(`d=${dkim.signingDomain}`, dkim.status.comment, unsigned(dkim.status.underSized)),
        )
      : none,
    dmarc: dmarc
      ? verdict(
          dmarc.status.result,
          details(
            `p=${dmarc.policy} d=${dmarc.domain}`,
            onDkimAlone ? unsigned(dmarc.alignment?.dkim?.underSized) : undefined,
          ),
        )
      : none,
    arc: r.arc ? verdict(r.arc.status.result, r.arc.status.comment) : none,
  };
}
