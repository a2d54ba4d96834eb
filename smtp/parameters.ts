import type { SMTPServerAddress } from 'smtp-server';

/**
 * The MAIL FROM and RCPT TO parameters a listener takes: those of the extensions its EHLO announces (SIZE, BODY of
 * 8BITMIME, SMTPUTF8 where offered, AUTH where offered). Any other is refused with 555 (RFC 5321 §4.1.1.11), not
 * ignored: a client that asked for delivery notifications (RET, NOTIFY) must not take silence for a yes.
 */
export function parametersOf(o: { auth: boolean; smtpUtf8: boolean }) {
  return {
    'MAIL FROM': ['SIZE', 'BODY', ...(o.smtpUtf8 ? ['SMTPUTF8'] : []), ...(o.auth ? ['AUTH'] : [])],
    'RCPT TO': [] as string[],
  };
}

/** The reply text for the first parameter of `address` its command does not take, or none. */
export function unsupportedParameter(
  address: SMTPServerAddress,
  command: 'MAIL FROM' | 'RCPT TO',
  known: string[],
): string | undefined {
  const name = Object.keys(address.args || {}).find((k) => !known.includes(k));
  if (name === undefined) return undefined;
  const takes = known.length ? `takes only ${known.join(', ')}` : 'takes no parameters';
  return `Unsupported parameter ${name}: ${command} ${takes} here`;
}
