import { Resolver } from 'node:dns/promises';

/**
 * A DNS resolver that asks the servers in DNS_SERVERS (`127.0.0.1:5353` style, port optional) or, when the
 * list is empty, the system's. Shared by the domain verifier, delivery (MX look-ups) and inbound checks.
 */
export function createResolver(
  servers: string[],
  options: { timeout?: number; tries?: number } = {},
): Resolver {
  const resolver = new Resolver({ timeout: options.timeout ?? 3000, tries: options.tries ?? 2 });
  if (servers.length > 0) resolver.setServers(servers);
  return resolver;
}

/** The name or the record type does not exist: a definite "nothing there", unlike a timeout or SERVFAIL. */
export function isNoAnswer(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === 'ENOTFOUND' || code === 'ENODATA' || code === 'NXDOMAIN';
}

/** The resolver shape mailauth (`authenticate`, `dkimVerify`, SPF) accepts: `(name, rrtype) => answers`. */
export type MailauthResolver = (name: string, rrtype: string) => Promise<any>;

export const mailauthResolver =
  (resolver: Resolver): MailauthResolver =>
  (name, rrtype) =>
    resolver.resolve(name, rrtype as 'TXT');
