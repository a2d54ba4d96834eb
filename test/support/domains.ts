import { expect } from 'vitest';
import type { TestDnsServer } from './dns-server.ts';
import type { ApiClient } from './service.ts';

/** DNS settings for a test service whose domains verify against `dns`. */
export const domainEnv = (dns: TestDnsServer): Record<string, string> => ({
  DNS_SERVERS: dns.serverAddress,
  POSTLINE_MX_HOST: 'mx.postline.test',
  POSTLINE_SPF_INCLUDE: 'spf.postline.test',
  POSTLINE_TRACKING_HOST: 'track.postline.test',
});

/**
 * Each domain's MX is `mx.<domain>` on 127.0.0.1 (by default `rcpt.test`): where the tests' receiving SMTP server
 * listens.
 */
export function recipientDomainOnLoopback(dns: TestDnsServer, domains = ['rcpt.test']) {
  for (const d of domains) {
    dns.set(d, 'MX', [{ exchange: `mx.${d}`, priority: 10 }]);
    dns.set(`mx.${d}`, 'A', ['127.0.0.1']);
  }
}

/**
 * What a service needs to send live email on loopback: its domains verify against `dns`, and mail for `rcpt.test`
 * goes to `mx` (the tests' receiving SMTP server), whose self-signed certificate it accepts.
 */
export function sendingToLoopbackEnv(dns: TestDnsServer, mx: { port: number }): Record<string, string> {
  recipientDomainOnLoopback(dns);
  return {
    ...domainEnv(dns),
    OUTBOUND_SMTP_PORT: String(mx.port),
    OUTBOUND_TLS_REJECT_UNAUTHORIZED: 'false',
  };
}

interface ApiDnsRecord {
  type: 'TXT' | 'MX' | 'CNAME';
  name: string;
  value: string;
  priority?: number;
  purpose: string;
}

/** Publishes a domain's dns_records on the test DNS server, as its owner would at their DNS provider. */
export function publishDomainRecords(
  dns: TestDnsServer,
  domain: { dns_records: ApiDnsRecord[] },
  only?: (r: ApiDnsRecord) => boolean,
) {
  const byNameType = new Map<string, { name: string; type: ApiDnsRecord['type']; values: string[] }>();
  for (const r of domain.dns_records.filter(only ?? (() => true))) {
    const k = `${r.name}|${r.type}`;
    const entry = byNameType.get(k) ?? { name: r.name, type: r.type, values: [] };
    entry.values.push(r.type === 'MX' ? `${r.priority ?? 10} ${r.value}` : r.value);
    byNameType.set(k, entry);
  }
  for (const { name, type, values } of byNameType.values()) dns.set(name, type, values);
}

/**
 * Adds a domain through the API, publishes its records on the test DNS server and verifies it: what a
 * test of live sending needs first. The service must run with `domainEnv(dns)`.
 */
export async function addVerifiedDomain(
  client: ApiClient,
  dns: TestDnsServer,
  name: string,
  body: Record<string, unknown> = {},
) {
  const added = await client.post('/v1/domains', { name, ...body });
  expect(added.status, JSON.stringify(added.body)).toBe(201);
  publishDomainRecords(dns, added.body);
  const verified = await client.post(`/v1/domains/${added.body.id}/verify`);
  expect(verified.body.status, JSON.stringify(verified.body)).toBe('verified');
  return verified.body;
}
