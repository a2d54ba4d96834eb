import { createHash } from 'node:crypto';
import { type AddressObject, simpleParser } from 'mailparser';
import { domainOf, formatMailbox, type Mailbox, parseAddress } from '../domain/emails/addresses.ts';
import { fitFileName } from '../domain/emails/attachment-types.ts';
import { EMAIL_LIMITS } from '../domain/emails/limits.ts';
import { namesListUnsubscribe } from '../domain/emails/list-unsubscribe.ts';
import { sendTime } from '../domain/emails/send-time.ts';
import { type AuthContext, metaOf } from '../platform/auth/auth-context.ts';
import { AppError } from '../platform/errors.ts';
import { isIdempotencyKey, requestHash } from '../platform/idempotency/idempotency.ts';
import { idShape, newId } from '../platform/ids.ts';
import type { Services } from '../platform/services.ts';
import { cutText, findUnstorableText, UNSTORABLE_TEXT } from '../platform/unstorable-text.ts';
import { acceptEmail } from '../write-side/emails/accept-email.ts';
import type { Accepted } from '../write-side/emails/email-draft.ts';
import { checkSendAt } from '../write-side/emails/email-limits.ts';
import { messageDraft, type SubmittedMessage } from '../write-side/emails/message-draft.ts';
import { oneEmail } from '../write-side/emails/quota.commands.ts';
import { type HeaderField, headerField, joinMessage, rfc5322Date, splitMessage } from './message-headers.ts';

/** The SMTP session a message came in, for its Received header. */
export interface Arrival {
  heloName: string;
  clientAddress: string;
  hostname: string;
  /** ESMTPSA over TLS, ESMTPA without. */
  secure: boolean;
}

const TAG = new RegExp(`^[A-Za-z0-9_-]{1,${EMAIL_LIMITS.tagChars}}$`);

const invalid = (header: string, message: string) =>
  new AppError('validation_error', `${header}: ${message}`);

/**
 * The X-Postline-* headers: options of a submission, documented in docs/smtp.md, never delivered. Each at most
 * once: of two values, neither is the sender's clear choice.
 */
function options(fields: HeaderField[]) {
  const value = (name: string) => {
    const given = fields.filter((f) => f.name === name.toLowerCase());
    if (given.length > 1) throw invalid(name, 'give it once');
    return given[0]?.value;
  };
  const tagList = value('X-Postline-Tags');
  const tags = tagList
    ? tagList
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean)
    : [];
  if (tags.length > EMAIL_LIMITS.tags) throw invalid('X-Postline-Tags', `at most ${EMAIL_LIMITS.tags} tags`);
  for (const t of tags) {
    if (!TAG.test(t))
      throw invalid(
        'X-Postline-Tags',
        `each tag is 1 to ${EMAIL_LIMITS.tagChars} characters of A-Z a-z 0-9 _ -`,
      );
  }
  const sendAt = value('X-Postline-Send-At');
  const sendAtRead = sendAt === undefined ? undefined : sendTime.safeParse(sendAt);
  if (sendAtRead?.success === false) throw invalid('X-Postline-Send-At', sendAtRead.error.issues[0].message);
  const idempotencyKey = value('X-Postline-Idempotency-Key');
  // The rule of Idempotency-Key (platform/idempotency), answered under the header's own name.
  if (idempotencyKey !== undefined && !isIdempotencyKey(idempotencyKey)) {
    throw invalid('X-Postline-Idempotency-Key', 'must be 1 to 255 printable ASCII characters');
  }
  const topicId = value('X-Postline-Topic');
  if (topicId !== undefined && !idShape('top').test(topicId))
    throw invalid('X-Postline-Topic', 'must be a topic id (top_...)');
  return { tags, sendAt, idempotencyKey, topicId };
}

/** X-Postline-Send-At's rules of time (those of `send_at`), answered under the header's own name. */
function checkedSendAt(sendAt: string | undefined, now: Date) {
  try {
    return checkSendAt(sendAt, now);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    throw invalid('X-Postline-Send-At', error.message.replace(/^`send_at`: /, ''));
  }
}

/** The pipeline's refusal of the topic (`topic_id`), answered under the header that named it. */
function underTopicHeader(error: unknown): never {
  const field = '`topic_id`: ';
  if (error instanceof AppError && error.message.startsWith(field))
    throw invalid('X-Postline-Topic', error.message.slice(field.length));
  throw error;
}

const ONE_FROM = 'the message needs exactly one From header, with one address';

const mailboxList = (field: AddressObject | AddressObject[] | undefined): Mailbox[] =>
  (Array.isArray(field) ? field : field ? [field] : [])
    .flatMap((o) => o.value)
    .flatMap((m) => (m.address ? [{ name: m.name || null, address: m.address }] : []));

/**
 * The message as it is delivered: Bcc and X-Postline-* removed, Date and Message-ID added when missing (the
 * Message-ID on the From domain, named after the email), and Postline's Received on top.
 */
function finalBytes(
  fields: HeaderField[],
  body: Buffer,
  from: string,
  emailId: string,
  arrival: Arrival,
  now: Date,
) {
  const kept = fields.filter((f) => f.name !== 'bcc' && !f.name.startsWith('x-postline-'));
  let messageId = kept.find((f) => f.name === 'message-id')?.value;
  if (!messageId) {
    messageId = `<${emailId}@${domainOf(from)}>`;
    kept.push(headerField('Message-ID', messageId));
  }
  if (!kept.some((f) => f.name === 'date')) kept.push(headerField('Date', rfc5322Date(now)));
  const received = headerField(
    'Received',
    `from ${arrival.heloName} ([${arrival.clientAddress}])\r\n\tby ${arrival.hostname} (Postline) with ${arrival.secure ? 'ESMTPSA' : 'ESMTPA'} id ${emailId};\r\n\t${rfc5322Date(now)}`,
  );
  return {
    bytes: joinMessage({ fields: [received, ...kept], body }),
    messageId,
    listUnsubscribe: namesListUnsubscribe(kept.map((f) => f.name)),
  };
}

/** What the API shows of a submitted message: its parsed addresses, subject, bodies and attachments. */
async function parsed(bytes: Buffer) {
  const mail = await simpleParser(bytes, {
    skipHtmlToText: true,
    skipTextToHtml: true,
    skipTextLinks: true,
    skipImageLinks: true,
  });
  const from = mailboxList(mail.from);
  if (from.length !== 1) throw invalid('From', ONE_FROM);
  const sender = parseAddress(from[0].address);
  if ('error' in sender) throw invalid('From', sender.error);
  // A single-part message's body ends with the CRLF that DATA's end marker needs: framing, not the sender's text
  // (in a multipart message the boundary takes that line break).
  const contentType = mail.headers.get('content-type') as { value?: string } | undefined;
  const singlePart = !contentType?.value?.toLowerCase().startsWith('multipart/');
  const fields = {
    from: formatMailbox(from[0]),
    fromAddress: sender.address,
    to: mailboxList(mail.to).map(formatMailbox),
    cc: mailboxList(mail.cc).map(formatMailbox),
    replyTo: mailboxList(mail.replyTo).map(formatMailbox),
    subject: cutText(mail.subject ?? '', EMAIL_LIMITS.subjectChars),
    html: typeof mail.html === 'string' ? mail.html : null,
    text: mail.text === undefined ? null : singlePart ? mail.text.replace(/\r?\n$/, '') : mail.text,
    attachments: mail.attachments.map((a) => ({
      filename: fitFileName(a.filename ?? 'attachment'),
      contentType: a.contentType,
      ...(a.contentId && { contentId: a.contentId.replace(/^<|>$/g, '') }),
      bytes: a.content,
    })),
  };
  const { attachments, ...text } = fields;
  const unstorable = findUnstorableText({ ...text, attachments: attachments.map((a) => a.filename) });
  if (unstorable !== undefined) throw invalid(unstorable, UNSTORABLE_TEXT);
  return fields;
}

/**
 * A message submitted by an authenticated client: becomes an email on the path of `POST /v1/emails`, under its
 * X-Postline-Idempotency-Key when it has one (the same key and message answer the first email's id).
 */
export async function submitMessage(
  services: Services,
  auth: AuthContext,
  envelopeTo: string[],
  submitted: Buffer,
  arrival: Arrival,
): Promise<Accepted | { id: string }> {
  const { fields, body } = splitMessage(submitted);
  // RFC 5322 §3.6: one From field. Of two, one would be shown and checked, and the other signed and seen.
  if (fields.filter((f) => f.name === 'from').length !== 1) throw invalid('From', ONE_FROM);
  const { tags, sendAt, idempotencyKey, topicId } = options(fields);
  // Parsed as submitted: what Postline removes or adds (Bcc, X-Postline-*, Received, Message-ID, Date) is none
  // of what the API shows.
  const { fromAddress, ...shown } = await parsed(submitted);
  const send = async (ids: { ids: string[]; resumed: boolean }) => {
    const now = services.clock.now();
    const checkedAt = checkedSendAt(sendAt, now);
    const { bytes, messageId, listUnsubscribe } = finalBytes(
      fields,
      body,
      fromAddress,
      ids.ids[0],
      arrival,
      now,
    );
    const message: SubmittedMessage = {
      raw: bytes,
      messageId,
      listUnsubscribe,
      envelopeTo,
      ...shown,
      tags,
      ...(checkedAt && { sendAt: checkedAt }),
      ...(topicId && { topicId }),
    };
    const chosen = { emailId: ids.ids[0], resumed: ids.resumed };
    const draft = messageDraft(auth, message, chosen, oneEmail(services, auth, chosen.emailId));
    return acceptEmail(services, { ...metaOf(auth), actor: 'smtp' }, draft).catch(underTopicHeader);
  };
  const newIds = () => [newId('em', services.clock.now().getTime())];
  if (idempotencyKey === undefined) return send({ ids: newIds(), resumed: false });

  const digest = createHash('sha256').update(submitted).digest('hex');
  const reply = await services.idempotency.run(
    auth,
    idempotencyKey,
    requestHash('SMTP', 'submission', { to: envelopeTo, message: digest }),
    () => services.clock.now(),
    async (claim) => ({ status: 200, body: { id: (await send(claim)).id } }),
    { leaseMs: services.config.IDEMPOTENCY_LEASE_MS, newIds },
  );
  const answer = reply.body as { id?: string; error?: { code: string; message: string } };
  if (answer.error) throw new AppError(answer.error.code as never, answer.error.message);
  return { id: answer.id! };
}
