import { Resolver } from 'node:dns/promises';

export interface MxHost {
  /** The MX host name (or the recipient domain itself for the implicit MX of RFC 5321 §5.1). */
  name: string;
  priority: number;
  /** IPv4 first, then IPv6. */
  addresses: string[];
}

/** Where mail for a domain goes: a list of hosts to try in order, or a verdict that applies to every recipient. */
export type Route =
  | { kind: 'hosts'; hosts: MxHost[] }
  | { kind: 'bounce'; smtpCode: number; reason: string }
  | { kind: 'defer'; reason: string };

type DnsError = Error & { code?: string };

/** Answers that say "this name has nothing of that type" rather than "ask again later". */
const NO_DATA = new Set(['ENODATA', 'ENOTFOUND']);

/**
 * MX resolution per RFC 5321 §5.1 and RFC 7505 over the configured DNS servers:
 * MX records sorted by preference (equal preferences shuffled); no MX -> the domain's own A/AAAA;
 * null MX (`0 .`) or NXDOMAIN -> bounce; SERVFAIL, refusal or time-out -> defer.
 */
export class MxResolver {
  private readonly resolver: Resolver;

  constructor(options: { dnsServers: string[]; timeoutMs: number }) {
    this.resolver = new Resolver({ timeout: Math.max(100, Math.floor(options.timeoutMs / 2)), tries: 2 });
    if (options.dnsServers.length > 0) this.resolver.setServers(options.dnsServers);
  }

  async route(domain: string): Promise<Route> {
    let records: { exchange: string; priority: number }[];
    try {
      records = await this.resolver.resolveMx(domain);
    } catch (error) {
      const err = error as DnsError;
      if (err.code === 'ENOTFOUND') return nxdomain(domain);
      if (err.code !== 'ENODATA')
        return { kind: 'defer', reason: `4.4.3 MX lookup for ${domain} failed: ${err.code}` };
      records = [];
    }

    const real = records.filter((r) => r.exchange !== '' && r.exchange !== '.');
    if (records.length > 0 && real.length === 0) {
      return { kind: 'bounce', smtpCode: 556, reason: `556 5.1.10 ${domain} does not accept mail (null MX)` };
    }
    if (real.length === 0) return this.implicitMx(domain);

    const ordered = shuffle(real).sort((a, b) => a.priority - b.priority);
    const hosts: MxHost[] = [];
    let temporary = false;
    for (const record of ordered) {
      const { addresses, failed } = await this.addresses(record.exchange);
      temporary ||= failed;
      if (addresses.length > 0) hosts.push({ name: record.exchange, priority: record.priority, addresses });
    }
    if (hosts.length > 0) return { kind: 'hosts', hosts };
    return {
      kind: 'defer',
      reason: `4.4.3 no address found for the MX hosts of ${domain}${temporary ? ' (DNS lookup failed)' : ''}`,
    };
  }

  private async implicitMx(domain: string): Promise<Route> {
    const { addresses, failed, nxdomain: missing } = await this.addresses(domain);
    if (addresses.length > 0) return { kind: 'hosts', hosts: [{ name: domain, priority: 0, addresses }] };
    if (failed) return { kind: 'defer', reason: `4.4.3 address lookup for ${domain} failed` };
    if (missing) return nxdomain(domain);
    return { kind: 'bounce', smtpCode: 550, reason: `550 5.1.2 ${domain} has no MX and no address records` };
  }

  private async addresses(
    name: string,
  ): Promise<{ addresses: string[]; failed: boolean; nxdomain: boolean }> {
    const [v4, v6] = await Promise.allSettled([this.resolver.resolve4(name), this.resolver.resolve6(name)]);
    const addresses: string[] = [];
    let failed = false;
    let nx = true;
    for (const r of [v4, v6]) {
      if (r.status === 'fulfilled') {
        addresses.push(...r.value);
        nx = false;
      } else {
        const code = (r.reason as DnsError).code ?? '';
        if (!NO_DATA.has(code)) failed = true;
        if (code !== 'ENOTFOUND') nx = false;
      }
    }
    return { addresses, failed, nxdomain: nx };
  }
}

function nxdomain(domain: string): Route {
  return { kind: 'bounce', smtpCode: 550, reason: `550 5.1.2 ${domain} does not exist (NXDOMAIN)` };
}

function shuffle<T>(items: T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
