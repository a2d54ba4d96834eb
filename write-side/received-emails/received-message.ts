import type { Readable } from 'node:stream';
import type { AddressObject, EmailAddress } from 'mailparser';
import type {
  Authentication,
  InboundEmailReceived,
  MailAddress,
  ReceivedAttachment,
  ReceivedContent,
  ReceivedHeader,
  ReceivedHeaders,
} from '../../domain/received-emails/received-email.events.ts';
import { spamScore } from '../../domain/received-emails/spam-score.ts';
import type { BlobStore } from '../../platform/blob-store.ts';
import type { Config } from '../../platform/config.ts';
import type { BlobRow, Mode } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import { storableText } from '../../platform/storable-text.ts';
import { type ParsedMessage, parseStoredMessage } from './stored-message.ts';

/** Who a received message is for: an organization's inbound domain (or, injected in test mode, none). */
export interface InboundTarget {
  orgId: string;
  mode: Mode;
  domainId: string | null;
  domain: string | null;
  /** The envelope recipients of this organization. */
  recipients: string[];
}

/** What was found checking an arrived message: its authentication, and a spam filter's score (rspamd's) if one scored it. */
export interface MessageChecks {
  authentication: Authentication;
  spamScore?: number | null;
}

export interface ArrivedMessage {
  /** The message as it arrived, in the blob store, and how to read it back. */
  rawKey: string;
  /** Its row, to commit with the first record of the message (BlobStore.stage); none when it is durable already. */
  rows: Promise<BlobRow[]>;
  size: number;
  read: () => Readable;
  mailFrom: string;
  /**
   * Whether its sender may send it again after a 451 (the MX): each organization's received email id is then
   * claimed under a key of the message (received-email-ids.ts), so that a retry finds it recorded. An injected
   * message is an arrival of its own each time.
   */
  retryable: boolean;
  remoteAddress: string | null;
  helo: string | null;
  /**
   * The checks, which may still run (and the raw message be synced) while the message is parsed: nothing is
   * recorded before they resolve, and nothing at all when they reject.
   */
  checks: Promise<MessageChecks>;
}

const TEXT_CHARS = 10 * 1024 * 1024;
const FIELD_CHARS = 998;

const field = (value: unknown) =>
  typeof value === 'string' && value ? storableText(value, FIELD_CHARS) : null;

/** A charset name as a Content-Type parameter may carry it: a token (RFC 2045), in lower case; else none. */
const charsetOf = (value: string | undefined) =>
  value && /^[A-Za-z0-9!#$%&'*+.^_`{|}~-]{1,40}$/.test(value) ? value.toLowerCase() : null;

/**
 * The mailboxes of a list, those of a group (`team: a@x.example, b@x.example;`) in the group's place: its name is
 * dropped, and an empty group (`undisclosed-recipients:;`) gives none.
 */
const mailboxes = (list: EmailAddress[]): EmailAddress[] =>
  list.flatMap((m) => (m.group ? mailboxes(m.group) : [m]));

/** The addresses of an address header as mailparser reads it (one object, or one per header line). */
const addresses = (value: unknown): MailAddress[] => {
  const objects = (Array.isArray(value) ? value : value ? [value] : []) as AddressObject[];
  return mailboxes(objects.flatMap((o) => o.value ?? [])).flatMap((m) =>
    m.address ? [{ email: field(m.address)!, name: field(m.name) }] : [],
  );
};

/**
 * Every header in the order of the message: the name in lower case, the value unfolded, decoded where mailparser
 * reads the header as text (`subject`); a header that repeats (Received) is there each time, with its own value.
 * mailparser keeps one value of some headers (Subject, Message-ID) however often they appear: a repeated one is read
 * from its own line. Header bytes are UTF-8 (RFC 6532), as mailparser reads them.
 */
function headersOf(mail: ParsedMessage): ReceivedHeader[] {
  const count = new Map<string, number>();
  for (const { key } of mail.headerLines) count.set(key, (count.get(key) ?? 0) + 1);
  const seen = new Map<string, number>();
  return mail.headerLines.map(({ key, line }) => {
    const nth = seen.get(key) ?? 0;
    seen.set(key, nth + 1);
    const parsed = mail.headers.get(key);
    const decoded =
      count.get(key) === 1
        ? parsed
        : Array.isArray(parsed) && parsed.length === count.get(key)
          ? parsed[nth]
          : undefined;
    const raw = Buffer.from(line.slice(line.indexOf(':') + 1), 'binary')
      .toString('utf8')
      .replace(/\r?\n[ \t]+/g, ' ')
      .trim();
    const value = typeof decoded === 'string' ? decoded : key === 'subject' ? mail.decodeWords(raw) : raw;
    return { name: storableText(key, 200), value: storableText(value, FIELD_CHARS * 8) };
  });
}

/** The message read from the blob store, or why it could not be: it is kept raw either way. */
async function parse(
  blobs: BlobStore,
  raw: Readable,
  at: number,
): Promise<{ mail: ParsedMessage } | { error: string }> {
  try {
    return { mail: await parseStoredMessage(blobs, raw, at) };
  } catch (error) {
    return { error: storableText(String((error as Error)?.message ?? error), 300) };
  }
}

/** What a received message is for every organization it is for: parsed, its bodies and headers stored. */
export interface ReadMessage {
  parsed: { mail: ParsedMessage } | { error: string };
  subject: string | null;
  from: MailAddress | null;
  /** What Postline's own spam score looks at (spam-score.ts), but the authentication. */
  shape: { hasDate: boolean; hasMessageId: boolean; hasText: boolean; hasHtml: boolean };
  contentKey: string | null;
  headersKey: string | null;
  /** The rows of its attachments, content and headers, to commit with the first record of the message. */
  rows: BlobRow[];
}

/**
 * Reads an arrived message from the blob store: parses it (each attachment decoded into a blob of its own), and
 * stages its bodies and its headers in one blob each (small blobs are rows for the record to commit, larger ones
 * are synced files).
 */
export async function readArrivedMessage(
  blobs: BlobStore,
  message: Pick<ArrivedMessage, 'read'>,
  at: number,
): Promise<ReadMessage> {
  const parsed = await parse(blobs, message.read(), at);
  const mail = 'mail' in parsed ? parsed.mail : null;
  const headers = mail ? headersOf(mail) : [];
  const named = new Set(headers.map((h) => h.name));
  const content: ReceivedContent = {
    text: typeof mail?.text === 'string' ? storableText(mail.text, TEXT_CHARS) : null,
    html: typeof mail?.html === 'string' ? storableText(mail.html, TEXT_CHARS) : null,
  };
  const subject = field(mail?.headers.get('subject'));
  const from = addresses(mail?.headers.get('from'))[0] ?? null;
  const shape = {
    hasDate: named.has('date'),
    hasMessageId: named.has('message-id'),
    hasText: content.text !== null,
    hasHtml: content.html !== null,
  };
  if (!mail) return { parsed, subject, from, shape, contentKey: null, headersKey: null, rows: [] };
  // Side by side with the larger attachments' syncs, which the parse left running.
  const [body, head, attachments] = await Promise.all([
    blobs.stage(Buffer.from(JSON.stringify(content)), at),
    blobs.stage(Buffer.from(JSON.stringify({ headers } satisfies ReceivedHeaders)), at),
    mail.rows,
  ]);
  const rows = [body.row, head.row, ...attachments].filter((r) => r !== undefined);
  return { parsed, subject, from, shape, contentKey: body.key, headersKey: head.key, rows };
}

/** A spam filter's score when one scored the message, else Postline's own. */
const scoreOf = (read: ReadMessage, checks: MessageChecks) =>
  checks.spamScore ??
  spamScore({
    authentication: checks.authentication,
    hasFrom: read.from !== null,
    subject: read.subject,
    ...read.shape,
  });

/** The record of a read message for one organization it is for, as the received email `receivedEmailId`, at `now`. */
export function receivedEmailData(
  read: ReadMessage,
  message: ArrivedMessage,
  checks: MessageChecks,
  target: InboundTarget,
  receivedEmailId: string,
  now: Date,
  config: Pick<Config, 'INBOUND_SPAM_THRESHOLD'>,
): InboundEmailReceived['data'] {
  const mail = 'mail' in read.parsed ? read.parsed.mail : null;
  const score = scoreOf(read, checks);
  return {
    receivedEmailId,
    orgId: target.orgId,
    mode: target.mode,
    domainId: target.domainId,
    domain: target.domain,
    envelope: {
      mailFrom: storableText(message.mailFrom, FIELD_CHARS),
      rcptTo: target.recipients.map((r) => storableText(r, FIELD_CHARS)),
      remoteAddress: message.remoteAddress,
      helo: field(message.helo),
    },
    from: read.from,
    to: addresses(mail?.headers.get('to')),
    cc: addresses(mail?.headers.get('cc')),
    replyTo: addresses(mail?.headers.get('reply-to')),
    subject: read.subject,
    messageId: field(mail?.headers.get('message-id')),
    inReplyTo: field(mail?.headers.get('in-reply-to')),
    rawKey: message.rawKey,
    size: message.size,
    contentKey: read.contentKey,
    headersKey: read.headersKey,
    attachments: (mail?.attachments ?? []).map(
      (a): ReceivedAttachment => ({
        attachmentId: newId('att', now.getTime()),
        filename: storableText((a.filename ?? 'attachment').replace(/[\r\n/\\]/g, '_'), 255) || 'attachment',
        contentType: field(a.contentType) ?? 'application/octet-stream',
        charset: charsetOf(a.charset),
        contentId: field(a.contentId?.replace(/^<|>$/g, '')),
        size: a.size,
        blobKey: a.blobKey,
      }),
    ),
    authentication: checks.authentication,
    spamScore: score,
    isSpam: score >= config.INBOUND_SPAM_THRESHOLD,
    parseError: 'error' in read.parsed ? read.parsed.error : null,
    receivedAt: now.toISOString(),
  };
}
