import { policyNames } from '../../../domain/delivery/mta-sts-policy.ts';
import type { TlsResultType } from '../../../domain/delivery/tls-report.ts';
import type { RecipientOutcome } from '../mta/message.ts';
import type { MxHost } from '../mta/mx.ts';
import type { MtaStsPort } from './mta-sts.ts';

/** A transaction on one host, with TLS verified (required, certificate valid for the host) or opportunistic. */
type Transact = (
  host: MxHost,
  verifiedTls: boolean,
) => Promise<{ outcomes: RecipientOutcome[] } | { outcomes?: undefined; error: string }>;

/**
 * The RFC 8460 result of a session that could not be opened with verified TLS, from the client's error text;
 * null when it failed before TLS (refused, timed out): no TLS failure then.
 */
export function tlsFailureOf(error: string): TlsResultType | null {
  if (/certificate has expired|CERT_HAS_EXPIRED/i.test(error)) return 'certificate-expired';
  if (/altnames|does not match certificate/i.test(error)) return 'certificate-host-mismatch';
  if (/self.signed|unable to (verify|get)|issuer|certificate|CERT_/i.test(error))
    return 'certificate-not-trusted';
  if (/STARTTLS|initiating TLS|ETLS/i.test(error)) return 'starttls-not-supported';
  return null;
}

/**
 * Delivery to a domain's MX hosts (in preference order) under its MTA-STS policy (RFC 8461 §5): in `enforce`
 * mode only hosts the policy names, each over verified TLS, anything else deferred (never sent in clear); in
 * `testing` mode the same is tried and a failure counted, then the host is used as without a policy. Without a
 * policy (or mode none) hosts are used as always, and the session counted by whether it ran over TLS.
 */
export async function deliverUnderPolicy(o: {
  domain: string;
  hosts: MxHost[];
  /** Unset: no MTA-STS (MTA_STS=false, or a test's MTA); hosts are used as always and nothing is counted. */
  sts?: MtaStsPort;
  transact: Transact;
}): Promise<{ outcomes: RecipientOutcome[] } | { outcomes?: undefined; lastError: string }> {
  const { domain, sts } = o;
  const { policy, failure } = sts ? await sts.policyOf(domain) : { policy: null };
  if (failure) sts?.record({ domain, policy, resultType: failure, mx: '' });
  const active = policy && policy.mode !== 'none' ? policy : null;
  const enforce = active?.mode === 'enforce';
  let lastError = 'no MX host could be reached';
  // Under enforce, hosts the policy does not name are passed over; they count as failures only if no host took the mail.
  const passedOver: string[] = [];
  for (const host of o.hosts) {
    const record = (resultType: TlsResultType | null) =>
      sts?.record({ domain, policy: active, resultType, mx: host.name });
    if (active && !policyNames(active, host.name)) {
      lastError = `4.7.5 MTA-STS: the policy of ${domain} does not name its MX host ${host.name} (TLS not verified)`;
      if (enforce) {
        passedOver.push(host.name);
        continue;
      }
      record('validation-failure');
    } else if (active) {
      const verified = await o.transact(host, true);
      if (verified.outcomes) {
        // Outcomes without `tls` ran no transaction (the attempt's time was up): no session to count.
        if (verified.outcomes[0]?.tls) record(null);
        return verified;
      }
      const tlsFailure = tlsFailureOf(verified.error);
      lastError = verified.error;
      if (!tlsFailure) continue;
      record(tlsFailure);
      lastError = `4.7.5 MTA-STS: no valid TLS with ${host.name} (${tlsFailure}): ${verified.error}`;
      if (enforce) continue;
    }
    const attempt = await o.transact(host, false);
    if (attempt.outcomes) {
      const tls = attempt.outcomes[0]?.tls;
      if (!active && tls !== undefined) record(tls ? null : 'starttls-not-supported');
      return attempt;
    }
    lastError = attempt.error;
  }
  for (const mx of passedOver) sts?.record({ domain, policy: active, resultType: 'validation-failure', mx });
  return { lastError };
}
