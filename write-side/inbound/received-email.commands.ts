import { type AddressObject, type ParsedMail, simpleParser } from 'mailparser';
import { blobStoreFor } from '../../platform/blob-store.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import type { EventMetadata, Mode, Position } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { storableText } from '../../platform/storable-text.ts';
import { type ReceivedEmailCommand, receivedEmailDecider } from './received-email.decider.ts';
import {
  type Authentication,
  type InboundEmailReceived,
  type MailAddress,
  type ReceivedAttachment,
  receivedEmailStream,
} from './received-email.events.ts';
import { spamScore } from './spam-score.ts';

/** Who a received message is for: an organization's inbound domain (or, injected in test mode, none). */
export interface InboundTarget {
  orgId: string;
  mode: Mode;
  domainId: string | null;
  domain: string | null;
  /** The envelope recipients of this organization. */
  recipients: string[];
}

export interface ArrivedMessage {
  raw: Buffer;
  mailFrom: string;
  remoteAddress: string | null;
  helo: string | null;
  authentication: Authentication;
  /** A spam filter's score (rspamd's), when one scored it; else Postline's own (spam-score.ts). */
  spamScore?: number | null;
}

/** What a received email's content blob holds: the bodies and headers, deleted with the raw message. */
export interface ReceivedContent {
  text: string | null;
  html: string | null;
  headers: Record<string, string | string[]>;
}

const TEXT_CHARS = 10 * 1024 * 1024;
const FIELD_CHARS = 998;

const field = (value: string | undefined | null) => (value ? storableText(value, FIELD_CHARS) : null);

const addresses = (value: AddressObject | AddressObject[] | undefined): MailAddress[] =>
  (Array.isArray(value) ? value : value ? [value] : [])
    .flatMap((o) => o.value)
    .flatMap((m) => (m.address ? [{ email: field(m.address)!, name: field(m.name) }] : []));

/** Header names in lower case with their values, unfolded; a header that repeats (Received) keeps a list. */
function headersOf(mail: ParsedMail): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const { key, line } of mail.headerLines) {
    const decoded = mail.headers.get(key);
    const raw = line
      .slice(line.indexOf(':') + 1)
      .replace(/\r?\n[ \t]+/g, ' ')
      .trim();
    const value = storableText(typeof decoded === 'string' ? decoded : raw, FIELD_CHARS * 8);
    const name = storableText(key, 200);
    const seen = headers[name];
    headers[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
  }
  return headers;
}

/** The message read, or why it could not be: it is kept raw either way. */
async function parse(raw: Buffer): Promise<{ mail: ParsedMail } | { error: string }> {
  try {
    return {
      mail: await simpleParser(raw, {
        skipHtmlToText: true,
        skipTextToHtml: true,
        skipTextLinks: true,
        skipImageLinks: true,
      }),
    };
  } catch (error) {
    return { error: storableText(String((error as Error)?.message ?? error), 300) };
  }
}

/**
 * Records a message that arrived for one or more organizations (docs/receiving.md): for each, the raw message,
 * its content and each attachment are written to the blob store, then `InboundEmailReceived` is appended. A
 * message that cannot be parsed is recorded all the same, raw, with its `parseError`. Resolves once every
 * event is committed: only then may the MX answer 250.
 */
export async function receiveMessage(
  services: Pick<Services, 'store' | 'clock' | 'config'>,
  message: ArrivedMessage,
  targets: InboundTarget[],
  actor: string,
): Promise<{ ids: string[]; position?: Position }> {
  const blobs = blobStoreFor(services.config);
  const parsed = await parse(message.raw);
  const mail = 'mail' in parsed ? parsed.mail : null;
  const headers = mail ? headersOf(mail) : {};
  const content: ReceivedContent = {
    text: typeof mail?.text === 'string' ? storableText(mail.text, TEXT_CHARS) : null,
    html: typeof mail?.html === 'string' ? storableText(mail.html, TEXT_CHARS) : null,
    headers,
  };
  const subject = field(mail?.subject);
  const from = mail ? (addresses(mail.from)[0] ?? null) : null;
  const score =
    message.spamScore ??
    spamScore({
      authentication: message.authentication,
      hasFrom: from !== null,
      hasDate: 'date' in headers,
      hasMessageId: 'message-id' in headers,
      subject,
      hasText: content.text !== null,
      hasHtml: content.html !== null,
    });
  const ids: string[] = [];
  let position: Position | undefined;
  for (const target of targets) {
    const now = services.clock.now();
    // Written side by side: each put waits for its own sync, and they share their folder's.
    const [rawKey, contentKey, attachments] = await Promise.all([
      blobs.put(message.raw, now.getTime()),
      mail ? blobs.put(Buffer.from(JSON.stringify(content)), now.getTime()) : null,
      Promise.all(
        (mail?.attachments ?? []).map(
          async (a): Promise<ReceivedAttachment> => ({
            attachmentId: newId('att', now.getTime()),
            filename:
              storableText((a.filename ?? 'attachment').replace(/[\r\n/\\]/g, '_'), 255) || 'attachment',
            contentType: field(a.contentType) ?? 'application/octet-stream',
            contentId: field(a.contentId?.replace(/^<|>$/g, '')),
            size: a.size,
            blobKey: await blobs.put(a.content, now.getTime()),
          }),
        ),
      ),
    ]);
    const data: InboundEmailReceived['data'] = {
      receivedEmailId: newId('in', now.getTime()),
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
      from,
      to: mail ? addresses(mail.to) : [],
      cc: mail ? addresses(mail.cc) : [],
      replyTo: mail ? addresses(mail.replyTo) : [],
      subject,
      messageId: field(mail?.messageId),
      inReplyTo: field(mail?.inReplyTo),
      rawKey,
      size: message.raw.length,
      contentKey,
      attachments,
      authentication: message.authentication,
      spamScore: score,
      isSpam: score >= services.config.INBOUND_SPAM_THRESHOLD,
      parseError: 'error' in parsed ? parsed.error : null,
      receivedAt: now.toISOString(),
    };
    const meta: EventMetadata = { orgId: target.orgId, mode: target.mode, actor };
    const result = await handleCommand(
      services.store,
      receivedEmailStream(data.receivedEmailId),
      receivedEmailDecider,
      { type: 'RecordReceivedEmail', email: data },
      meta,
    );
    ids.push(data.receivedEmailId);
    position = result.position ?? position;
  }
  return { ids, position };
}

/**
 * Ends a received email's retention: its blobs are deleted, then `ReceivedEmailPurged` is appended. In that
 * order, so a crash in between leaves it due and the next run deletes (nothing more) and records it.
 */
export async function purgeReceivedEmail(
  services: Pick<Services, 'store' | 'clock' | 'config'>,
  meta: EventMetadata,
  receivedEmailId: string,
): Promise<void> {
  const blobs = blobStoreFor(services.config);
  await handleCommand(
    services.store,
    receivedEmailStream(receivedEmailId),
    receivedEmailDecider,
    async (state): Promise<ReceivedEmailCommand> => {
      if (state.exists && !state.purged) await Promise.all(state.blobKeys.map((k) => blobs.delete(k)));
      return { type: 'PurgeReceivedEmail', receivedEmailId, at: services.clock.now().toISOString() };
    },
    meta,
  );
}
