import addressparser from 'nodemailer/lib/addressparser';
import { parseVerp } from '../domain/emails/verp.ts';
import { type HeaderField, splitMessage } from './message-headers.ts';

/** One recipient's fate in a bounce: from a DSN's per-recipient fields, or guessed from a plain-text bounce. */
export interface BouncedRecipient {
  recipient: string;
  /**
   * A DSN's `Action` (RFC 3464): `failed` is final whatever the status (a queue that gave up on a transient
   * failure reports `failed` with a 4.x.x one), `delayed` is news. A plain-text bounce has none.
   */
  action?: 'failed' | 'delayed';
  /** RFC 3463 status, `5.1.1`: without an action, permanent (5) is a bounce, transient (4) a delay. */
  status: string;
  /** The remote server's words (`Diagnostic-Code`), or the bounce's text. */
  diagnostic: string;
}

export type Report =
  | { kind: 'bounce'; recipients: BouncedRecipient[]; text: string; originalEmailId?: string }
  | { kind: 'complaint'; recipient?: string; feedbackType: string; originalEmailId?: string }
  | { kind: 'other' };

/** `Name: value` fields of a DSN or ARF part, folded lines unfolded, in blocks separated by empty lines. */
function fieldBlocks(text: string): Map<string, string>[] {
  return text
    .replace(/\r\n/g, '\n')
    .split(/\n\s*\n/)
    .map((block) => {
      const fields = new Map<string, string>();
      for (const line of block.replace(/\n[ \t]+/g, ' ').split('\n')) {
        const colon = line.indexOf(':');
        if (colon > 0) fields.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
      }
      return fields;
    })
    .filter((f) => f.size > 0);
}

/**
 * The one address a header names (`Bob Smith <bob@x.test>`, `"Smith, Bob" <bob@x.test>`, an encoded display
 * name): a report about one recipient names one; none when it names several or none.
 */
function addressOf(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const found = addressparser(value, { flatten: true }).filter((a) => a.address.includes('@'));
  return found.length === 1 ? found[0].address : undefined;
}

/** A DSN's or ARF's recipient field, its address type dropped: `rfc822; ann@x.test` -> `ann@x.test`. */
const typedAddressOf = (value: string | undefined) => addressOf(value?.replace(/^[^;]*;/, ''));

/**
 * Whether a message is an automatic reply (RFC 3834 `Auto-Submitted` other than `no`; the vacation responders'
 * `X-Autoreply`, `X-Autorespond`, `Precedence: auto_reply`) that the mail system did not send: an out-of-office
 * reply to the return path is no bounce. The mail system marks its own bounces `auto-replied` too (Exim, Postfix);
 * those come from `MAILER-DAEMON` or `postmaster`, or carry Exim's `X-Failed-Recipients`.
 */
function isAutoReply(fields: HeaderField[]): boolean {
  const value = (name: string) => fields.find((f) => f.name === name)?.value;
  const autoSubmitted = value('auto-submitted')?.split(';')[0].trim().toLowerCase();
  const marked =
    (autoSubmitted !== undefined && autoSubmitted !== 'no') ||
    value('x-autoreply') !== undefined ||
    value('x-autorespond') !== undefined ||
    value('precedence')?.toLowerCase() === 'auto_reply';
  const from = addressOf(value('from'))?.split('@')[0].toLowerCase();
  const mailSystem =
    from === 'mailer-daemon' || from === 'postmaster' || value('x-failed-recipients') !== undefined;
  return marked && !mailSystem;
}

/**
 * The email a report is about, from the original message it quotes: its VERP return path, or a Message-ID that
 * Postline wrote (`<em_…@domain>`).
 */
function originalEmailId(original: Buffer | undefined): string | undefined {
  if (!original) return undefined;
  const { fields } = splitMessage(original);
  const value = (name: string) => fields.find((f) => f.name === name)?.value;
  const returnPath = value('return-path');
  const verp = returnPath ? parseVerp(returnPath) : null;
  if (verp) return verp.emailId;
  return /^<(em_[0-9a-z]+)@/.exec(value('message-id') ?? '')?.[1];
}

interface Part {
  contentType: string;
  body: Buffer;
}

/** Quoted-printable or base64 as the part says; anything else as it is. */
function decoded(encoding: string | undefined, body: Buffer): Buffer {
  const e = encoding?.toLowerCase();
  if (e === 'base64') return Buffer.from(body.toString('latin1').replace(/\s+/g, ''), 'base64');
  if (e === 'quoted-printable') {
    const text = body.toString('latin1').replace(/=\r?\n/g, '');
    return Buffer.from(
      text.replace(/=([0-9A-Fa-f]{2})/g, (_, h) => String.fromCharCode(Number.parseInt(h, 16))),
      'latin1',
    );
  }
  return body;
}

/**
 * The message's type and, for a multipart one, its parts, one level deep: a report's parts are what it is
 * read by. Quoted messages stay whole (mailparser would inline a `message/rfc822` part into the text).
 */
function parts(message: Buffer): { subject: string; autoReply: boolean; parts: Part[] } {
  const { fields, body } = splitMessage(message);
  const value = (name: string) => fields.find((f) => f.name === name)?.value;
  const contentType = value('content-type') ?? 'text/plain';
  const type = contentType.split(';')[0].trim().toLowerCase();
  const subject = value('subject') ?? '';
  const autoReply = isAutoReply(fields);
  const boundary = /boundary\s*=\s*(?:"([^"]+)"|([^\s;]+))/i.exec(contentType);
  if (!type.startsWith('multipart/') || !boundary) {
    return {
      subject,
      autoReply,
      parts: [{ contentType: type, body: decoded(value('content-transfer-encoding'), body) }],
    };
  }
  const delimiter = `\r\n--${boundary[1] ?? boundary[2]}`;
  const text = body.toString('latin1');
  return {
    subject,
    autoReply,
    parts: text
      .split(delimiter)
      .slice(1)
      .filter((chunk) => !chunk.startsWith('--'))
      .map((chunk) => {
        const part = splitMessage(Buffer.from(chunk.replace(/^[ \t]*\r\n/, ''), 'latin1'));
        const partValue = (name: string) => part.fields.find((f) => f.name === name)?.value;
        return {
          contentType: (partValue('content-type') ?? 'text/plain').split(';')[0].trim().toLowerCase(),
          body: decoded(partValue('content-transfer-encoding'), part.body.subarray(2)),
        };
      }),
  };
}

export async function readReport(message: Buffer): Promise<Report> {
  const report = parts(message);
  const part = (...types: string[]) => report.parts.find((p) => types.includes(p.contentType))?.body;
  const original = part('message/rfc822', 'text/rfc822-headers', 'message/global', 'message/global-headers');
  const feedback = part('message/feedback-report');
  if (feedback) {
    const [fields] = fieldBlocks(feedback.toString('utf8'));
    const originalTo = original && splitMessage(original).fields.find((f) => f.name === 'to')?.value;
    return {
      kind: 'complaint',
      feedbackType: fields?.get('feedback-type') ?? 'abuse',
      recipient: typedAddressOf(fields?.get('original-rcpt-to')) ?? addressOf(originalTo),
      originalEmailId: originalEmailId(original),
    };
  }
  const text = report.parts
    .filter((p) => p.contentType === 'text/plain')
    .map((p) => p.body.toString('utf8'))
    .join('\n');
  const status = part('message/delivery-status', 'message/global-delivery-status');
  if (status) {
    const [, ...perRecipient] = fieldBlocks(status.toString('utf8'));
    const recipients = perRecipient.flatMap((f): BouncedRecipient[] => {
      const recipient = typedAddressOf(f.get('final-recipient') ?? f.get('original-recipient'));
      const action = f.get('action')?.toLowerCase();
      // `delivered`, `relayed` and `expanded` are news of success; `delayed` is a transient failure.
      if (!recipient || (action !== 'failed' && action !== 'delayed')) return [];
      const status = f.get('status') ?? (action === 'failed' ? '5.0.0' : '4.0.0');
      return [{ recipient, action, status, diagnostic: f.get('diagnostic-code') ?? '' }];
    });
    return { kind: 'bounce', recipients, text, originalEmailId: originalEmailId(original) };
  }
  // A DSN or ARF above is read whatever its Auto-Submitted (Postfix marks its DSNs so); only free text is taken
  // for an out-of-office reply.
  if (report.autoReply) return { kind: 'other' };
  if (/undeliver|returned|returning|fail|not delivered/i.test(`${report.subject}\n${text.slice(0, 2000)}`)) {
    // The reply the remote server gave, as far as the text quotes one; its status only from there, not from any
    // `x.y.z` in the prose ("returning 5.1.26" is a date).
    const quoted = /\b[45]\d\d[ -]([45]\.\d{1,3}\.\d{1,3})\b.*/.exec(text);
    const code = quoted?.[1] ?? '5.0.0';
    const reply = quoted?.[0] ?? text.slice(0, 1000);
    return {
      kind: 'bounce',
      recipients: [{ recipient: '', status: code, diagnostic: reply }],
      text,
      originalEmailId: originalEmailId(original),
    };
  }
  return { kind: 'other' };
}
