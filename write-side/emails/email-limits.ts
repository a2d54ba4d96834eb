import { recipientsOf } from '../../domain/emails/email.events.ts';
import { EMAIL_LIMITS } from '../../domain/emails/limits.ts';
import { isOwnedHeader } from '../../domain/emails/owned-headers.ts';
import { SEND_TIME_RULE, sendInstant } from '../../domain/emails/send-time.ts';
import { invalidField } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { DraftAttachment, EmailDraft } from './email-draft.ts';

/**
 * At least one recipient, and at most the limit over to, cc and bcc: each address counts once, as it is sent to
 * once (an address named in `to` and again in `cc` is one recipient).
 */
export function checkRecipients(draft: Pick<EmailDraft, 'to' | 'cc' | 'bcc'>): void {
  const count = recipientsOf({
    to: draft.to.map((m) => m.address),
    cc: draft.cc.map((m) => m.address),
    bcc: draft.bcc.map((m) => m.address),
  }).length;
  if (count === 0) throw invalidField('to', 'needs at least one recipient');
  if (count > EMAIL_LIMITS.recipients) {
    throw invalidField('to', `at most ${EMAIL_LIMITS.recipients} recipients in all (to, cc and bcc)`);
  }
}

/**
 * `send_at` (ISO 8601 or words, send-time.ts) as the ISO string of the instant it means now, once that is in the
 * future and within the horizon; for emails and broadcasts.
 */
export function checkSendAt(sendAt: string | undefined, now: Date): string | undefined {
  if (sendAt === undefined) return undefined;
  const t = sendInstant(sendAt, now);
  if (Number.isNaN(t)) throw invalidField('send_at', SEND_TIME_RULE);
  if (t <= now.getTime()) throw invalidField('send_at', 'must be in the future');
  if (t > now.getTime() + EMAIL_LIMITS.sendAtHorizonDays * 86_400_000) {
    throw invalidField('send_at', `must be at most ${EMAIL_LIMITS.sendAtHorizonDays} days ahead`);
  }
  return new Date(t).toISOString();
}

/** Custom headers: few, well-formed, one line each, none that Postline writes itself. */
export function checkHeaders(headers: Record<string, string>): Record<string, string> {
  const entries = Object.entries(headers);
  if (entries.length > EMAIL_LIMITS.headers)
    throw invalidField('headers', `must have at most ${EMAIL_LIMITS.headers} entries`);
  // Header names are case-insensitive: of two spellings of one name only one would go out.
  const seen = new Set<string>();
  for (const [name, value] of entries) {
    if (!/^[!-9;-~]{1,100}$/.test(name)) throw invalidField(`headers.${name}`, 'is not a valid header name');
    const lower = name.toLowerCase();
    if (seen.has(lower)) throw invalidField(`headers.${name}`, 'is given twice (header names ignore case)');
    seen.add(lower);
    if (isOwnedHeader(lower)) {
      throw invalidField(
        `headers.${name}`,
        'is set by Postline and cannot be overridden (use the request fields instead)',
      );
    }
    if (/[\r\n\0]/.test(value))
      throw invalidField(`headers.${name}`, 'must not contain line breaks (CR or LF)');
    if (value.length > EMAIL_LIMITS.headerValueChars) {
      throw invalidField(`headers.${name}`, `must be at most ${EMAIL_LIMITS.headerValueChars} characters`);
    }
  }
  return headers;
}

/** An attachment with its id, and its bytes, or the URL they are still to be fetched from. */
export type CheckedAttachment = Omit<DraftAttachment, 'content'> & { id: string } & (
    | { bytes: Buffer }
    | { url: string }
  );

/** The limit on an email's attachments in all, as its refusal says it. */
export const attachmentsTooLarge = () =>
  invalidField(
    'attachments',
    `must be at most ${EMAIL_LIMITS.attachmentBytes / 1024 / 1024} MB in all (decoded)`,
  );

/**
 * The attachments' bytes (base64 decoded), each with its id; at most the limit in all. Those given by URL are
 * fetched later in the pipeline, within what these leave (attachment-paths.ts).
 */
export function attachmentBytes(list: DraftAttachment[], at: number): CheckedAttachment[] {
  let total = 0;
  return list.map(({ content, ...a }, i) => {
    const id = newId('att', at);
    if (!Buffer.isBuffer(content) && 'url' in content) return { id, ...a, url: content.url };
    const bytes = Buffer.isBuffer(content) ? content : decodeBase64(content.base64, i);
    total += bytes.length;
    if (total > EMAIL_LIMITS.attachmentBytes) throw attachmentsTooLarge();
    return { id, ...a, bytes };
  });
}

/**
 * Whole base64 only: padded to a multiple of 4, or unpadded with 2 or 3 characters in the last group. Anything else
 * (a lone last character, padding in the wrong place) would decode to a silently truncated file.
 */
function decodeBase64(content: string, i: number): Buffer {
  // Whitespace (line-wrapped base64) goes first, so the check is one linear pass.
  const compact = content.replace(/\s+/g, '');
  const data = compact.replace(/={1,2}$/, '');
  // A search for a character outside the alphabet: `^[…]+$` over megabytes can run out of the regexp stack.
  const whole =
    data.length > 0 &&
    !/[^A-Za-z0-9+/]/.test(data) &&
    (compact === data ? data.length % 4 !== 1 : compact.length % 4 === 0 && data.length % 4 !== 1);
  if (!whole) throw invalidField(`attachments[${i}].content`, 'must be base64');
  return Buffer.from(compact, 'base64');
}
