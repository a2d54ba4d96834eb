import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/**
 * Deliveries go only to public unicast addresses: never loopback, private (RFC 1918, unique local), link-local
 * (cloud metadata at 169.254.169.254), carrier-grade NAT, multicast, reserved, or IPv6 forms that embed an IPv4
 * address (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo). The check runs on the address the socket will
 * connect to, inside the connect-time DNS lookup, so a name cannot resolve to a public address for a check and to
 * an internal one for the connection (DNS rebinding).
 */
export function forbiddenRange(address: string): string | null {
  if (!ipaddr.isValid(address)) return 'invalid';
  const ip = ipaddr.process(address); // IPv4-mapped IPv6 is judged as the IPv4 address it carries
  const range = ip.range();
  if (range !== 'unicast') return range;
  // ipaddr.js calls ::/96 (deprecated IPv4-compatible, e.g. ::7f00:1 for 127.0.0.1) unicast; some stacks still
  // route it to the IPv4 address it carries, and no public service lives there. (NAT64 is already 'rfc6052'.)
  if (ip.kind() === 'ipv6' && ip.match(IPV4_COMPATIBLE)) return 'ipv4Compatible';
  return null;
}

export class BlockedAddressError extends Error {
  readonly code = 'EWEBHOOKBLOCKED';
}

const blocked = (host: string, address: string, range: string) =>
  new BlockedAddressError(
    `blocked: ${host} resolves to ${address} (${range}); webhooks only go to public addresses`,
  );

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** A `lookup` for net/tls.connect (through undici's `connect` option) that refuses internal addresses. */
export function guardedLookup(
  hostname: string,
  options: { all?: boolean; family?: number } | undefined,
  callback: LookupCallback,
) {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    for (const a of addresses) {
      const range = forbiddenRange(a.address);
      if (range) return callback(blocked(hostname, a.address, range), []);
    }
    if (options?.all) return callback(null, addresses);
    callback(null, addresses[0].address, addresses[0].family);
  });
}

/** Literal IP hosts never reach a lookup: they are checked here before a request is made. */
export function checkLiteralHost(url: URL): BlockedAddressError | null {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!isIP(host)) return null;
  const range = forbiddenRange(host);
  return range ? blocked(host, host, range) : null;
}
