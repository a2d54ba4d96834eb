import type { Resolver } from 'node:dns/promises';
import { request } from 'node:https';
import type { LookupFunction } from 'node:net';
import { MAX_POLICY_BYTES } from '../../../domain/delivery/mta-sts-policy.ts';

export interface PolicyFetchOptions {
  /** The service's resolver: `mta-sts.<domain>` is looked up where the MX records are. */
  resolver: Resolver;
  /** 443; tests serve the policy elsewhere (MTA_STS_PORT). */
  port: number;
  /** Trusted CAs (the system's plus OUTBOUND_TLS_CA_FILE), or undefined for Node's own. */
  ca?: string[];
  timeoutMs: number;
}

/** Why a policy could not be had: the HTTPS side (a certificate) or anything else (RFC 8460 result types). */
export class PolicyFetchError extends Error {
  readonly webpki: boolean;
  constructor(message: string, webpki: boolean) {
    super(message);
    this.webpki = webpki;
  }
}

/**
 * A `lookup` for node:https that asks the service's resolver (DNS_SERVERS) for IPv4 addresses; `refuse` may turn
 * an address down (an internal one), failing the request.
 */
export function resolverLookup(
  resolver: Resolver,
  refuse?: (address: string) => string | null,
): LookupFunction {
  return (name, options, callback) => {
    resolver.resolve4(name).then(
      (addresses) => {
        const refused = addresses.map((a) => refuse?.(a)).find((r) => r);
        if (refused) return callback(new Error(`${name} resolves to a ${refused} address`), '', 4);
        if (options.all)
          return callback(
            null,
            addresses.map((address) => ({ address, family: 4 })),
          );
        callback(null, addresses[0], 4);
      },
      (err) => callback(err, '', 4),
    );
  };
}

/** Node's messages for certificates it does not trust or that name another host. */
const CERTIFICATE_ERROR = /certificate|altnames|self.signed|issuer|CERT_/i;

/**
 * The policy text at `https://mta-sts.<domain>/.well-known/mta-sts.txt` (RFC 8461 §3.3): a certificate valid for
 * that name, a 200 with text/plain, no redirect followed, at most 64 KiB, within the time-out.
 */
export function fetchPolicyText(domain: string, o: PolicyFetchOptions): Promise<string> {
  const host = `mta-sts.${domain}`;
  const lookup = resolverLookup(o.resolver);
  return new Promise((resolve, reject) => {
    const fail = (message: string, webpki = false) => reject(new PolicyFetchError(message, webpki));
    const req = request(
      {
        host,
        port: o.port,
        path: '/.well-known/mta-sts.txt',
        method: 'GET',
        servername: host,
        lookup,
        ...(o.ca && { ca: o.ca }),
        rejectUnauthorized: true,
        timeout: o.timeoutMs,
        headers: { 'user-agent': 'Postline MTA-STS' },
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return fail(`HTTP ${res.statusCode} from ${host}`);
        }
        if (!/^text\/plain\b/i.test(res.headers['content-type'] ?? '')) {
          res.resume();
          return fail(`${host} served ${res.headers['content-type'] ?? 'no content type'}, not text/plain`);
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_POLICY_BYTES) {
            req.destroy();
            return fail(`the policy at ${host} is larger than ${MAX_POLICY_BYTES} bytes`);
          }
          chunks.push(chunk);
        });
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        res.on('error', (err) => fail(err.message));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from ${host} in ${o.timeoutMs} ms`)));
    req.on('error', (err) => fail(`${host}: ${err.message}`, CERTIFICATE_ERROR.test(err.message)));
    req.end();
  });
}
