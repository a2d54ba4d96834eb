import { parseMailbox } from './addresses.ts';

/**
 * RFC 8058 one-click unsubscribe: the link (a `POST` to it unsubscribes at once, as a mailbox provider's button
 * sends it) and a `mailto:` beside it for clients that only write mail. Gmail and Yahoo ask bulk senders for both
 * headers, DKIM-signed.
 */
export const listUnsubscribeHeaders = (url: string, mailbox: string) => ({
  'List-Unsubscribe': `<${url}>, <mailto:${mailbox}>`,
  'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
});

/** Whether the sender wrote a List-Unsubscribe of its own (header names ignore case): Postline adds none then. */
export const namesListUnsubscribe = (headerNames: Iterable<string>) =>
  [...headerNames].some((name) => name.toLowerCase() === 'list-unsubscribe');

/** An email as the rule reads it: its topic and its recipients, as mailboxes (`Ann <ann@example.org>`). */
export interface TopicEmail {
  topicId?: string;
  to: string[];
  cc: string[];
  bcc: string[];
}

/**
 * The address an email about a topic carries Postline's unsubscribe link for: its one recipient, in lower case.
 * Null for an email about no topic, and for one with several recipients: they all get the same message, so no
 * link in it can be one person's (the sender gives its own, or sends a broadcast).
 */
export function topicUnsubscribeAddress(email: TopicEmail): string | null {
  if (!email.topicId) return null;
  const addresses = new Set(
    [...email.to, ...email.cc, ...email.bcc].map((raw) => {
      const mailbox = parseMailbox(raw);
      return 'address' in mailbox ? mailbox.address.toLowerCase() : raw.toLowerCase();
    }),
  );
  return addresses.size === 1 ? [...addresses][0] : null;
}

/**
 * A message with header fields added at the end of its header section, before the empty line that ends it; the
 * rest is left byte for byte. Values are ones Postline writes: ASCII, one line each.
 */
export function withHeaderFields(message: Buffer, headers: Record<string, string>): Buffer {
  const end = message.indexOf('\r\n\r\n');
  const at = end < 0 ? message.length : end + 2;
  const fields = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return Buffer.concat([
    message.subarray(0, at),
    Buffer.from(fields.join(''), 'latin1'),
    message.subarray(at),
  ]);
}
