import { Resolver } from 'node:dns/promises';
import { dkimVerify } from 'mailauth';
import type { TestDnsServer } from './dns-server.ts';

/** A message's DKIM signatures as a receiving server verifies them, its keys looked up on the test DNS server. */
export function verifyDkim(dns: TestDnsServer, raw: Buffer) {
  const resolver = new Resolver();
  resolver.setServers([dns.serverAddress]);
  return dkimVerify(raw, {
    resolver: async (name: string, type: string) =>
      type === 'TXT' ? resolver.resolveTxt(name) : (resolver.resolve(name, type) as Promise<string[]>),
  });
}

type DkimResult = Awaited<ReturnType<typeof verifyDkim>>['results'][number];

/** The headers a signature covers, in lower case. */
export const signedHeaders = (result: DkimResult) =>
  (result as unknown as { signingHeaders: { keys: string } }).signingHeaders.keys
    .split(':')
    .map((k) => k.trim().toLowerCase());
