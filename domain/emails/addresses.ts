import { domainToASCII } from 'node:url';
import { BoundedMap } from '../../platform/bounded-map.ts';

export interface Mailbox {
  name: string | null;
  /** Local part as given, domain in ASCII (punycode) and lower case. */
  address: string;
}

// RFC 5321 dot-atom local part (ASCII); a quoted local part is accepted too. UTF-8 local parts (SMTPUTF8) are
// not: few receivers accept them and the error is clearer here than as a bounce.
const ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
const LOCAL = new RegExp(
  `^(?:${ATOM}(?:\\.${ATOM})*|"(?:[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\[\\x20-\\x7e])*")$`,
);
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

// Senders write to the same few domains over and over: their checked form is kept.
const checkedDomains = new BoundedMap<string, string | null>(10_000);

/** The domain in ASCII, or null when it is not a plausible Internet host name (IDNs are converted). */
export function asciiDomain(domain: string): string | null {
  let ascii = checkedDomains.get(domain);
  if (ascii === undefined) {
    ascii = checkDomain(domain);
    checkedDomains.set(domain, ascii);
  }
  return ascii;
}

function checkDomain(domain: string): string | null {
  const ascii = domainToASCII(domain.trim().toLowerCase());
  if (!ascii || ascii.length > 253) return null;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l))) return null;
  if (/^\d+$/.test(labels[labels.length - 1])) return null;
  return ascii;
}

/** Validates a bare address; returns it normalised (domain in ASCII lower case) or a reason. */
export function parseAddress(raw: string): { address: string } | { error: string } {
  const at = raw.lastIndexOf('@');
  if (at < 1) return { error: 'must be an email address (local@domain)' };
  const local = raw.slice(0, at);
  const domain = raw.slice(at + 1);
  if (local.length > 64) return { error: 'has a local part longer than 64 characters' };
  if (!LOCAL.test(local)) return { error: 'has an invalid local part' };
  const ascii = asciiDomain(domain);
  if (!ascii) return { error: `has an invalid domain ${JSON.stringify(domain)}` };
  const address = `${local}@${ascii}`;
  if (address.length > 254) return { error: 'is longer than 254 characters' };
  return { address };
}

/** A header line's limit (RFC 5322): no address, display name included, is longer. */
export const MAX_MAILBOX_CHARS = 998;

/** `Display Name <local@domain>`, `"Quoted, Name" <local@domain>` or a plain address (RFC 5322 name-addr). */
export function parseMailbox(raw: string): Mailbox | { error: string } {
  if (raw.length > MAX_MAILBOX_CHARS) return { error: `must be at most ${MAX_MAILBOX_CHARS} characters` };
  if (/[\r\n\0]/.test(raw)) return { error: 'must not contain line breaks' };
  const s = raw.trim();
  // Split by hand, not with a regex: `(.*?)\s*<` backtracks quadratically on long runs of spaces.
  const open = s.endsWith('>') ? s.lastIndexOf('<') : -1;
  if (open < 0 || s.slice(open + 1, -1).includes('>')) {
    const r = parseAddress(s);
    return 'error' in r ? r : { name: null, address: r.address };
  }
  let name = s.slice(0, open).trim();
  if (name.startsWith('"') && name.endsWith('"') && name.length >= 2)
    name = name.slice(1, -1).replace(/\\(.)/g, '$1');
  if (/[<>]/.test(name)) return { error: 'has a display name with < or >' };
  if (name.length > 200) return { error: 'has a display name longer than 200 characters' };
  const r = parseAddress(s.slice(open + 1, -1).trim());
  return 'error' in r ? r : { name: name || null, address: r.address };
}

/** Back to header form; names with specials are quoted so that nodemailer and receivers read them back intact. */
export function formatMailbox(m: Mailbox): string {
  if (!m.name) return m.address;
  const name = /^[\p{L}\p{N} !#$%&'*+/=?^_`{|}~-]+$/u.test(m.name)
    ? m.name
    : `"${m.name.replace(/(["\\])/g, '\\$1')}"`;
  return `${name} <${m.address}>`;
}

export const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1);

/** Addresses at this domain never leave Postline in test mode: the simulator answers for them (docs/emails.md). */
export const SIMULATOR_DOMAIN = 'simulator.postline.dev';

/**
 * The destination of a recipient's mail: its domain in ASCII and lower case, as the MTA resolves it. The delivery
 * queue, its pauses and its view are per destination.
 */
export function destinationOf(address: string): string {
  const domain = address.slice(address.lastIndexOf('@') + 1);
  return asciiDomain(domain) ?? domain.toLowerCase();
}
