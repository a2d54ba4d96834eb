/**
 * VERP return paths: `MAIL FROM:<b+<email id>@<return-path domain>>`. A bounce (DSN) that comes back to this
 * address names the email it belongs to, even when the remote server quotes nothing of the original message.
 * Ids are lower-case Crockford base32 (platform/ids.ts), so a receiver that lower-cases the local part does no harm.
 */
const PREFIX = 'b+';
const EMAIL_ID = /^[a-z]+_[0-9a-z]+$/;

export function verpAddress(emailId: string, returnPathDomain: string): string {
  if (!EMAIL_ID.test(emailId)) throw new Error(`not an email id: ${emailId}`);
  return `${PREFIX}${emailId}@${returnPathDomain.toLowerCase()}`;
}

/** The email id in a VERP return path, or null when the address is not one of ours. Accepts `<...>`. */
export function parseVerp(address: string): { emailId: string } | null {
  const bare = address.trim().replace(/^<(.*)>$/, '$1');
  const at = bare.lastIndexOf('@');
  if (at <= 0) return null;
  const local = bare.slice(0, at).toLowerCase();
  if (!local.startsWith(PREFIX)) return null;
  const emailId = local.slice(PREFIX.length);
  return EMAIL_ID.test(emailId) ? { emailId } : null;
}
