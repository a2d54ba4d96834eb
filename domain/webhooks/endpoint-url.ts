import { forbiddenRange } from '../../platform/public-address.ts';

/**
 * Why a webhook endpoint url (trimmed) cannot receive deliveries, or null when it can. It must be an absolute
 * http(s) url without credentials, whitespace or control characters (the URL parser drops some of them silently,
 * so what was stored would not be what is called), with a port other than 0. Unless private networks are allowed,
 * its host must not be an internal address written literally, nor `localhost`: the SSRF guard would block every
 * delivery (docs/webhooks.md). Names are judged at delivery, when they are resolved.
 */
export function endpointUrlProblem(url: string, allowPrivateNetworks: boolean): string | null {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses.
  if (/[\s\x00-\x1f\x7f]/.test(url)) return 'must not contain spaces, line breaks or control characters';
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'must be an absolute http(s) URL without credentials';
  }
  const web = u.protocol === 'https:' || u.protocol === 'http:';
  if (!web || !u.hostname || u.username || u.password)
    return 'must be an absolute http(s) URL without credentials';
  if (u.port === '0') return 'must not use port 0';
  if (allowPrivateNetworks) return null;
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
  const internal =
    host === 'localhost' || host.endsWith('.localhost') || (isIpLiteral(u) && forbiddenRange(host) !== null);
  return internal
    ? `must reach a public address: ${u.hostname} is internal, and webhooks only go to public addresses`
    : null;
}

/** The WHATWG parser writes an IPv4 host in dotted form (`2130706433` → `127.0.0.1`) and an IPv6 one in brackets. */
const isIpLiteral = (u: URL) => u.hostname.startsWith('[') || /^\d{1,3}(\.\d{1,3}){3}$/.test(u.hostname);
