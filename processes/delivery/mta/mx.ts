import { Resolver } from 'node:dns/promises';
import { BoundedMap } from '../../../platform/bounded-map.ts';

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

/** Node's resolver reports no MX TTL: a route is kept no longer than this, nor than its addresses' TTL. */
const MAX_ROUTE_TTL_MS = 60_000;
const MAX_CACHED_ROUTES = 10_000;

type Lookup = { route: Route; ttlMs: number };

/**
 * MX resolution per RFC 5321 §5.1 and RFC 7505 over the configured DNS servers:
 * MX records sorted by preference (equal preferences shuffled); no MX -> the domain's own A/AAAA;
 * null MX (`0 .`) or NXDOMAIN -> bounce; SERVFAIL, refusal or time-out -> defer.
 * Routes to hosts are cached for their TTL (as a caching resolver next to an MTA would), and concurrent look-ups
 * of one domain share the queries; a bounce or defer verdict is looked up again every time.
 */
export class MxResolver {
  private readonly resolver: Resolver;
  private readonly routes = new BoundedMap<string, { lookup: Promise<Lookup>; expires: number }>(
    MAX_CACHED_ROUTES,
  );

  constructor(options: { dnsServers: string[]; timeoutMs: number }) {
    this.resolver = new Resolver({ timeout: Math.max(100, Math.floor(options.timeoutMs / 2)), tries: 2 });
    if (options.dnsServers.length > 0) this.resolver.setServers(options.dnsServers);
  }

  async route(domain: string): Promise<Route> {
    let entry = this.routes.get(domain);
    if (!entry || entry.expires <= Date.now()) {
      const fresh = { lookup: this.lookUp(domain), expires: Number.POSITIVE_INFINITY };
      entry = fresh;
      this.routes.set(domain, fresh);
      const forget = () => {
        if (this.routes.get(domain) === fresh) this.routes.delete(domain);
      };
      void fresh.lookup.then(({ route, ttlMs }) => {
        if (route.kind === 'hosts') fresh.expires = Date.now() + Math.min(ttlMs, MAX_ROUTE_TTL_MS);
        else forget();
      }, forget);
    }
    const { route } = await entry.lookup;
    // Equal preferences in a new random order on every use, as if looked up afresh.
    return route.kind === 'hosts' ? { kind: 'hosts', hosts: byPreference(route.hosts) } : route;
  }

  private async lookUp(domain: string): Promise<Lookup> {
    let records: { exchange: string; priority: number }[];
    try {
      records = await this.resolver.resolveMx(domain);
    } catch (error) {
      const err = error as DnsError;
      if (err.code === 'ENOTFOUND') return verdict(nxdomain(domain));
      if (err.code !== 'ENODATA')
        return verdict({ kind: 'defer', reason: `4.4.3 MX lookup for ${domain} failed: ${err.code}` });
      records = [];
    }

    const real = records.filter((r) => r.exchange !== '' && r.exchange !== '.');
    if (records.length > 0 && real.length === 0) {
      return verdict({
        kind: 'bounce',
        smtpCode: 556,
        reason: `556 5.1.10 ${domain} does not accept mail (null MX)`,
      });
    }
    if (real.length === 0) return this.implicitMx(domain);

    const hosts: MxHost[] = [];
    let temporary = false;
    let ttlMs = MAX_ROUTE_TTL_MS;
    for (const record of byPreference(real)) {
      const { addresses, failed, ttlMs: ttl } = await this.addresses(record.exchange);
      temporary ||= failed;
      if (addresses.length > 0) {
        hosts.push({ name: record.exchange, priority: record.priority, addresses });
        ttlMs = Math.min(ttlMs, ttl);
      }
    }
    if (hosts.length > 0) return { route: { kind: 'hosts', hosts }, ttlMs };
    return verdict({
      kind: 'defer',
      reason: `4.4.3 no address found for the MX hosts of ${domain}${temporary ? ' (DNS lookup failed)' : ''}`,
    });
  }

  private async implicitMx(domain: string): Promise<Lookup> {
    const { addresses, failed, nxdomain: missing, ttlMs } = await this.addresses(domain);
    if (addresses.length > 0)
      return { route: { kind: 'hosts', hosts: [{ name: domain, priority: 0, addresses }] }, ttlMs };
    if (failed) return verdict({ kind: 'defer', reason: `4.4.3 address lookup for ${domain} failed` });
    if (missing) return verdict(nxdomain(domain));
    return verdict({
      kind: 'bounce',
      smtpCode: 550,
      reason: `550 5.1.2 ${domain} has no MX and no address records`,
    });
  }

  private async addresses(
    name: string,
  ): Promise<{ addresses: string[]; failed: boolean; nxdomain: boolean; ttlMs: number }> {
    const [v4, v6] = await Promise.allSettled([
      this.resolver.resolve4(name, { ttl: true }),
      this.resolver.resolve6(name, { ttl: true }),
    ]);
    const addresses: string[] = [];
    let failed = false;
    let nx = true;
    let ttlMs = MAX_ROUTE_TTL_MS;
    for (const r of [v4, v6]) {
      if (r.status === 'fulfilled') {
        for (const a of r.value) {
          addresses.push(a.address);
          ttlMs = Math.min(ttlMs, a.ttl * 1000);
        }
        nx = false;
      } else {
        const code = (r.reason as DnsError).code ?? '';
        if (!NO_DATA.has(code)) failed = true;
        if (code !== 'ENOTFOUND') nx = false;
      }
    }
    return { addresses, failed, nxdomain: nx, ttlMs };
  }
}

const verdict = (route: Route): Lookup => ({ route, ttlMs: 0 });

/** Sorted by preference, equal preferences in random order. */
const byPreference = <T extends { priority: number }>(items: T[]) =>
  shuffle(items).sort((a, b) => a.priority - b.priority);

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
