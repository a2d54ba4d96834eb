import type { Readable } from 'node:stream';
import type { AddressObject } from 'mailparser';
import { type BlobStore, blobStoreFor } from '../../platform/blob-store.ts';
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
  type ReceivedContent,
  receivedEmailStream,
} from './received-email.events.ts';
import { spamScore } from './spam-score.ts';
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

export interface ArrivedMessage {
  /** The message as it arrived, already in the blob store (synced), and how to read it back. */
  rawKey: string;
  size: number;
  read: () => Readable;
  mailFrom: string;
  remoteAddress: string | null;
  helo: string | null;
  authentication: Authentication;
  /** A spam filter's score (rspamd's), when one scored it; else Postline's own (spam-score.ts). */
  spamScore?: number | null;
}

const TEXT_CHARS = 10 * 1024 * 1024;
const FIELD_CHARS = 998;

const field = (value: unknown) =>
  typeof value === 'string' && value ? storableText(value, FIELD_CHARS) : null;

const addresses = (value: unknown): MailAddress[] => {
  const objects = (Array.isArray(value) ? value : value ? [value] : []) as AddressObject[];
  return objects
    .flatMap((o) => o.value ?? [])
    .flatMap((m) => (m.address ? [{ email: field(m.address)!, name: field(m.name) }] : []));
};

/** Header names in lower case with their values, unfolded; a header that repeats (Received) keeps a list. */
function headersOf(mail: ParsedMessage): Record<string, string | string[]> {
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
    if (seen === undefined) headers[name] = value;
    else if (Array.isArray(seen)) seen.push(value);
    else headers[name] = [seen, value];
  }
  return headers;
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

/**
 * Records a message that arrived for one or more organizations (docs/receiving.md). The raw message is in the
 * blob store already; it is parsed from there, each attachment decoded into a blob of its own and the bodies and
 * headers into one more, and then `InboundEmailReceived` is appended for each organization (which share the
 * blobs: their retention ends together). A message that cannot be parsed is recorded all the same, raw, with its
 * `parseError`. Resolves once every event is committed: only then may the MX answer 250.
 */
export async function receiveMessage(
  services: Pick<Services, 'store' | 'clock' | 'config'>,
  message: ArrivedMessage,
  targets: InboundTarget[],
  actor: string,
): Promise<{ ids: string[]; position?: Position }> {
  const blobs = blobStoreFor(services.config);
  const at = services.clock.now().getTime();
  const parsed = await parse(blobs, message.read(), at);
  const mail = 'mail' in parsed ? parsed.mail : null;
  const headers = mail ? headersOf(mail) : {};
  const content: ReceivedContent = {
    text: typeof mail?.text === 'string' ? storableText(mail.text, TEXT_CHARS) : null,
    html: typeof mail?.html === 'string' ? storableText(mail.html, TEXT_CHARS) : null,
    headers,
  };
  const subject = field(mail?.headers.get('subject'));
  const from = addresses(mail?.headers.get('from'))[0] ?? null;
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
  const contentKey = mail ? await blobs.put(Buffer.from(JSON.stringify(content)), at) : null;
  const ids: string[] = [];
  let position: Position | undefined;
  for (const target of targets) {
    const now = services.clock.now();
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
      to: addresses(mail?.headers.get('to')),
      cc: addresses(mail?.headers.get('cc')),
      replyTo: addresses(mail?.headers.get('reply-to')),
      subject,
      messageId: field(mail?.headers.get('message-id')),
      inReplyTo: field(mail?.headers.get('in-reply-to')),
      rawKey: message.rawKey,
      size: message.size,
      contentKey,
      attachments: (mail?.attachments ?? []).map(
        (a): ReceivedAttachment => ({
          attachmentId: newId('att', now.getTime()),
          filename:
            storableText((a.filename ?? 'attachment').replace(/[\r\n/\\]/g, '_'), 255) || 'attachment',
          contentType: field(a.contentType) ?? 'application/octet-stream',
          contentId: field(a.contentId?.replace(/^<|>$/g, '')),
          size: a.size,
          blobKey: a.blobKey,
        }),
      ),
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
      // The id is new: its stream is empty, no need to read it.
      { history: [] },
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
