import type { Resolver } from 'node:dns/promises';
import { request } from 'node:https';
import { forbiddenRange } from '../../../platform/public-address.ts';
import { resolverLookup } from './policy-fetch.ts';

/**
 * Posts a gzip report to an `https:` rua (RFC 8460 §5.2: `application/tlsrpt+gzip`, any 2xx is taken). The name
 * comes from a receiving domain's DNS, so it must resolve to public addresses only, as webhooks must (unless
 * `privateNetworks`: WEBHOOK_ALLOW_PRIVATE_NETWORKS, development and tests).
 */
export function postReport(
  url: string,
  body: Buffer,
  o: { resolver: Resolver; ca?: string[]; timeoutMs: number; privateNetworks: boolean },
): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        lookup: resolverLookup(o.resolver, o.privateNetworks ? undefined : forbiddenRange),
        ...(o.ca && { ca: o.ca }),
        timeout: o.timeoutMs,
        headers: { 'content-type': 'application/tlsrpt+gzip', 'content-length': body.length },
      },
      (res) => {
        res.resume();
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) resolve();
        else reject(new Error(`HTTP ${status} from ${new URL(url).host}`));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from ${new URL(url).host}`)));
    req.on('error', reject);
    req.end(body);
  });
}
