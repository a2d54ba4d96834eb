import type { Readable } from 'node:stream';
import type { AddressObject } from 'mailparser';
import {
  type ReceivedEmailCommand,
  receivedEmailDecider,
} from '../../domain/received-emails/received-email.decider.ts';
import {
  type Authentication,
  headerListOfMap,
  type InboundEmailReceived,
  type MailAddress,
  type ReceivedAttachment,
  type ReceivedContent,
  type ReceivedHeader,
  type ReceivedHeaders,
  receivedEmailStream,
} from '../../domain/received-emails/received-email.events.ts';
import { spamScore } from '../../domain/received-emails/spam-score.ts';
import type { BlobStore } from '../../platform/blob-store.ts';
import { handleCommand, rebuildState } from '../../platform/eventstore/command.ts';
import type { EventMetadata, Mode, Position } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
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

/**
 * Every header in the order of the message: the name in lower case, the value unfolded, decoded where mailparser
 * reads the header as text (`subject`); a header that repeats (Received) is there each time, with its own value.
 */
function headersOf(mail: ParsedMessage): ReceivedHeader[] {
  return mail.headerLines.map(({ key, line }) => {
    const decoded = mail.headers.get(key);
    const raw = line
      .slice(line.indexOf(':') + 1)
      .replace(/\r?\n[ \t]+/g, ' ')
      .trim();
    return {
      name: storableText(key, 200),
      value: storableText(typeof decoded === 'string' ? decoded : raw, FIELD_CHARS * 8),
    };
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

/**
 * Records a message that arrived for one or more organizations (docs/receiving.md). The raw message is in the
 * blob store already; it is parsed from there, each attachment decoded into a blob of its own and the bodies and
 * headers into one more, and then `InboundEmailReceived` is appended for each organization (which share the
 * blobs: their retention ends together). A message that cannot be parsed is recorded all the same, raw, with its
 * `parseError`. Resolves once every event is committed: only then may the MX answer 250.
 */
export async function receiveMessage(
  services: Pick<Services, 'store' | 'clock' | 'config' | 'blobs'>,
  message: ArrivedMessage,
  targets: InboundTarget[],
  actor: string,
): Promise<{ ids: string[]; position?: Position }> {
  const blobs = services.blobs;
  const at = services.clock.now().getTime();
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
  const score =
    message.spamScore ??
    spamScore({
      authentication: message.authentication,
      hasFrom: from !== null,
      hasDate: named.has('date'),
      hasMessageId: named.has('message-id'),
      subject,
      hasText: content.text !== null,
      hasHtml: content.html !== null,
    });
  // Side by side: puts in flight together share their folder's sync.
  const [contentKey, headersKey] = mail
    ? await Promise.all([
        blobs.put(Buffer.from(JSON.stringify(content)), at),
        blobs.put(Buffer.from(JSON.stringify({ headers } satisfies ReceivedHeaders)), at),
      ])
    : [null, null];
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
      headersKey,
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
 * A message recorded with its headers in its content blob: they are copied into a blob of their own and
 * `ReceivedEmailHeadersKept` names it, so that they outlive the content. Nothing for a message whose headers are
 * kept apart already; a content blob that cannot be read (gone) leaves the headers unknown.
 */
async function keepHeadersApart(
  services: Pick<Services, 'store' | 'clock' | 'config' | 'blobs'>,
  meta: EventMetadata,
  receivedEmailId: string,
): Promise<void> {
  const stream = receivedEmailStream(receivedEmailId);
  const history = await services.store.readStream(stream);
  const state = rebuildState(receivedEmailDecider, history);
  if (!state.exists || state.purged || state.headersKey !== undefined || !state.contentKey) return;
  const blobs = services.blobs;
  const content = await readContent(blobs, state.contentKey);
  if (!content) return;
  const headers: ReceivedHeaders = { headers: headerListOfMap(content.headers ?? {}) };
  const headersKey = await blobs.put(Buffer.from(JSON.stringify(headers)), services.clock.now().getTime());
  await handleCommand(
    services.store,
    stream,
    receivedEmailDecider,
    { type: 'KeepReceivedEmailHeaders', receivedEmailId, headersKey },
    meta,
    { history },
  );
}

/** A content blob read back, or null when it is gone. */
async function readContent(blobs: BlobStore, key: string): Promise<ReceivedContent | null> {
  return blobs.get(key).then(
    (bytes) => JSON.parse(bytes.toString('utf8')) as ReceivedContent,
    () => null,
  );
}

/**
 * Ends a received email's retention: its headers are kept apart if they are not already (a message recorded
 * before they had a blob of their own), its blobs are deleted, then `ReceivedEmailPurged` is appended. In that
 * order, so a crash in between leaves it due and the next run deletes (nothing more) and records it.
 */
export async function purgeReceivedEmail(
  services: Pick<Services, 'store' | 'clock' | 'config' | 'db' | 'lookUps' | 'blobs'>,
  meta: EventMetadata,
  receivedEmailId: string,
): Promise<void> {
  const blobs = services.blobs;
  const state = rebuildState(
    receivedEmailDecider,
    await services.store.readStream(receivedEmailStream(receivedEmailId)),
  );
  if (state.exists && !state.purged && state.headersKey === undefined) {
    await keepHeadersApart(services, meta, receivedEmailId);
    // The records of the message for other organizations share its content blob, which this purge deletes:
    // each keeps its headers first.
    const others = await services.lookUps.receivedEmailsSharingRaw(
      services.db,
      state.rawKey,
      new Date(state.receivedAt),
    );
    for (const other of others.filter((o) => o.id !== receivedEmailId))
      await keepHeadersApart(
        services,
        { orgId: other.org_id, mode: other.mode, actor: meta.actor },
        other.id,
      );
  }
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
