import { parseVerp } from '../domain/emails/verp.ts';
import { splitMessage } from './message-headers.ts';

/** One recipient's fate in a bounce: from a DSN's per-recipient fields, or guessed from a plain-text bounce. */
export interface BouncedRecipient {
  recipient: string;
  /** RFC 3463 status, `5.1.1`: permanent (5) is a bounce, transient (4) a delay. */
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

/** `rfc822; ann@x.test` -> `ann@x.test`. */
const addressOf = (value: string | undefined) =>
  value
    ?.replace(/^[^;]*;/, '')
    .trim()
    .replace(/^<|>$/g, '');

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
function parts(message: Buffer): { contentType: string; subject: string; parts: Part[] } {
  const { fields, body } = splitMessage(message);
  const value = (name: string) => fields.find((f) => f.name === name)?.value;
  const contentType = value('content-type') ?? 'text/plain';
  const type = contentType.split(';')[0].trim().toLowerCase();
  const subject = value('subject') ?? '';
  const boundary = /boundary\s*=\s*(?:"([^"]+)"|([^\s;]+))/i.exec(contentType);
  if (!type.startsWith('multipart/') || !boundary) {
    return {
      contentType: type,
      subject,
      parts: [{ contentType: type, body: decoded(value('content-transfer-encoding'), body) }],
    };
  }
  const delimiter = `\r\n--${boundary[1] ?? boundary[2]}`;
  const text = body.toString('latin1');
  return {
    contentType: type,
    subject,
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
      recipient: addressOf(fields?.get('original-rcpt-to')) ?? addressOf(originalTo),
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
      const recipient = addressOf(f.get('final-recipient') ?? f.get('original-recipient'));
      const action = f.get('action')?.toLowerCase();
      // `delivered`, `relayed` and `expanded` are news of success; `delayed` is a transient failure.
      if (!recipient || (action !== 'failed' && action !== 'delayed')) return [];
      const status = f.get('status') ?? (action === 'failed' ? '5.0.0' : '4.0.0');
      return [{ recipient, status, diagnostic: f.get('diagnostic-code') ?? '' }];
    });
    return { kind: 'bounce', recipients, text, originalEmailId: originalEmailId(original) };
  }
  if (/undeliver|returned|returning|fail|not delivered/i.test(`${report.subject}\n${text.slice(0, 2000)}`)) {
    const code = /\b([45])\.\d{1,3}\.\d{1,3}\b/.exec(text)?.[0] ?? '5.0.0';
    // The reply the remote server gave, as far as the text quotes one.
    const reply = /\b[45]\d\d[ -][45]\.\d{1,3}\.\d{1,3}\b.*/.exec(text)?.[0] ?? text.slice(0, 1000);
    return {
      kind: 'bounce',
      recipients: [{ recipient: '', status: code, diagnostic: reply }],
      text,
      originalEmailId: originalEmailId(original),
    };
  }
  return { kind: 'other' };
}
