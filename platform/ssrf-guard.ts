import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { forbiddenRange } from './public-address.ts';

/**
 * Requests Postline makes to URLs its users give (webhook endpoints, attachments by `path`) go to public addresses
 * only, unless an operator allows private networks: a name is checked as it is resolved for the connection (so a
 * DNS answer cannot change between the check and the connect), a literal address before any request.
 */
export class BlockedAddressError extends Error {
  readonly code = 'EADDRBLOCKED';
}

const blocked = (host: string, address: string, range: string) =>
  new BlockedAddressError(
    `blocked: ${host} resolves to ${address} (${range}); only public addresses are reached`,
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
