import { domainToASCII, domainToUnicode } from 'node:url';

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * The longest name Postline takes: its longest record name, the DKIM one `<selector>._domainkey.<name>` (a
 * 14-character selector, `pl<yyyymm><6 hex>` or `ed…`), must fit in the 253 characters of a DNS name.
 */
export const MAX_DOMAIN_NAME_LENGTH = 253 - 'pl202601a1b2c3._domainkey.'.length;

/**
 * A domain name as Postline stores it: trimmed, lower case, without a trailing dot, internationalized labels
 * in punycode (`bücher.example` -> `xn--bcher-kva.example`). Returns the reason when it is no host name we
 * can send from: IP literals, single labels, labels over 63 characters, bad characters, names too long for their
 * DNS records.
 */
export function normalizeDomainName(input: string): { name: string } | { error: string } {
  const trimmed = input.trim().replace(/\.$/, '');
  if (!trimmed) return { error: 'is required' };
  if (isIpLiteral(trimmed.replace(/^\[|\]$/g, '')))
    return { error: 'must be a domain name, not an IP address' };
  // Only letters (any script), digits, hyphens and dots: domainToASCII alone would accept URL syntax such as `a.com/x`.
  const name = /^[\p{L}\p{M}\p{N}.-]+$/u.test(trimmed) ? domainToASCII(trimmed.toLowerCase()) : '';
  if (!name) return { error: 'is not a valid domain name' };
  if (name.length > MAX_DOMAIN_NAME_LENGTH)
    return {
      error: `must be at most ${MAX_DOMAIN_NAME_LENGTH} characters, so that its DKIM record name \`<selector>._domainkey.<name>\` fits in the 253 characters of a DNS name`,
    };
  const labels = name.split('.');
  if (labels.length < 2) return { error: 'must have at least two labels, e.g. example.com' };
  const bad = labels.find((l) => !LABEL.test(l));
  if (bad !== undefined) {
    return {
      error:
        bad.length > 63
          ? 'has a label longer than 63 characters'
          : `has an invalid label "${bad}" (letters, digits and inner hyphens only)`,
    };
  }
  // An `xn--` label must be valid punycode: an invalid one comes back from the decoder unchanged.
  const fake = labels.find((l) => l.startsWith('xn--') && domainToUnicode(`${l}.test`).startsWith('xn--'));
  if (fake !== undefined) return { error: `has an invalid internationalized label "${fake}"` };
  if (/^[0-9]+$/.test(labels[labels.length - 1]))
    return { error: 'must end in a top-level domain, not a number' };
  return { name };
}

const OCTET = '(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4 = new RegExp(`^${OCTET}(\\.${OCTET}){3}$`);

/** An IPv4 address in dotted decimal, or anything shaped like an IPv6 address (hex groups and colons). */
function isIpLiteral(text: string): boolean {
  return IPV4.test(text) || (text.includes(':') && /^[0-9a-f:.]+(%\w+)?$/i.test(text));
}
