import ipaddr from 'ipaddr.js';

const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/**
 * Webhook deliveries, TLS reports posted to an `https:` rua and attachments fetched by `path` go only to public
 * unicast addresses: never loopback, private (RFC 1918, unique local), link-local
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
