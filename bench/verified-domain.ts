import type { TestDnsServer } from '../test/support/dns-server.ts';
import { publishDomainRecords } from '../test/support/domains.ts';
import { runCli } from '../test/support/process.ts';

/**
 * A Business organization on a running server (`env`, HTTP on `httpPort`) with the domain `name` added,
 * published on `dns` and verified: what the SMTP benches need before their load. Resolves with its live key.
 */
export async function organizationWithDomain(
  env: Record<string, string>,
  httpPort: number,
  dns: TestDnsServer,
  name: string,
  domain: Record<string, unknown> = {},
): Promise<string> {
  const created = await runCli(['orgs', 'create', '--name', 'Bench', '--plan', 'business', '--json'], env);
  const key = JSON.parse(created.stdout).live_key as string;
  const post = async (path: string, body: unknown) =>
    (
      await fetch(`http://127.0.0.1:${httpPort}/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    ).json() as Promise<any>;
  const added = await post('/domains', { name, ...domain });
  publishDomainRecords(dns, added);
  if ((await post(`/domains/${added.id}/verify`, {})).status !== 'verified')
    throw new Error('domain not verified');
  return key;
}
