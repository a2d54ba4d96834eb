import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTestService } from '../support/service.ts';

/**
 * The addresses the installation sends from are those of POSTLINE_OUTBOUND_IPS and of SOURCES_FILE's sources
 * together: an operator who declares egress sources need not list them twice for a domain's SPF record.
 */
const SOURCES_FILE = join(mkdtempSync(join(tmpdir(), 'postline-outbound-')), 'sources.json');
writeFileSync(
  SOURCES_FILE,
  JSON.stringify({
    sources: [
      { name: 'a', address: '192.0.2.10', helo: 'out-a.example.net' },
      { name: 'b', address: '2001:db8::12', helo: 'out-b.example.net' },
    ],
    pools: [{ name: 'shared', sources: ['a', 'b'] }],
  }),
);
const svc = useTestService({ env: { POSTLINE_OUTBOUND_IPS: '192.0.2.10,192.0.2.99', SOURCES_FILE } });

describe('a new domain’s SPF record', () => {
  it('authorises every listed address and every declared source, each once', async () => {
    const acme = await svc.createOrg('business');
    const name = `outbound-${Date.now().toString(36)}.example.com`;
    const created = await acme.live.post('/v1/domains', { name });
    expect(created.status).toBe(201);
    const spf = created.body.dns_records.find((r: { purpose: string }) => r.purpose === 'spf');
    expect(spf.value).toBe('v=spf1 ip4:192.0.2.10 ip4:192.0.2.99 ip6:2001:db8::12 ~all');
  });
});
