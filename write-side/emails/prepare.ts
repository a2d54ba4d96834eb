import { domainOf, formatMailbox, type Mailbox, parseMailbox } from '../../domain/emails/addresses.ts';
import type { EmailContent } from '../../domain/emails/email.events.ts';
import { EMAIL_LIMITS } from '../../domain/emails/limits.ts';
import { OWNED_HEADERS } from '../../domain/emails/owned-headers.ts';
import type { SendEmailInput } from '../../domain/emails/request.ts';
import type { AuthContext } from '../../platform/auth/auth-context.ts';
import { AppError } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { renderPublished } from '../templates/render.ts';

/** An accepted request, ready for the decider: content plus the attachment bytes still to be stored. */
export interface PreparedEmail {
  content: Omit<EmailContent, 'attachments' | 'raw'>;
  attachments: { id: string; filename: string; contentType: string; contentId?: string; bytes: Buffer }[];
  /** A message submitted over SMTP, delivered as these bytes. */
  raw?: { bytes: Buffer; messageId: string };
  sendAt?: string;
}

/**
 * A message submitted over SMTP, as the relay parsed it (smtp/): recipients from the envelope, the rest from
 * the message's headers and MIME parts, and `raw`, the bytes to deliver.
 */
export interface SubmittedMessage {
  raw: Buffer;
  messageId: string;
  /** RCPT TO: every recipient, Bcc included. */
  envelopeTo: string[];
  /** The From, To, Cc and Reply-To headers' mailboxes (`Name <address>`). */
  from: string;
  to: string[];
  cc: string[];
  replyTo: string[];
  subject: string;
  html: string | null;
  text: string | null;
  attachments: { filename: string; contentType: string; contentId?: string; bytes: Buffer }[];
  tags: string[];
  sendAt?: string;
}

const invalid = (field: string, message: string) =>
  new AppError('validation_error', `\`${field}\`: ${message}`);

function mailboxes(field: string, value: string | string[] | undefined): Mailbox[] {
  const list = value === undefined ? [] : Array.isArray(value) ? value : [value];
  return list.map((raw, i) => {
    const m = parseMailbox(raw);
    if ('error' in m) throw invalid(Array.isArray(value) ? `${field}[${i}]` : field, m.error);
    return m;
  });
}

function checkHeaders(headers: Record<string, string>): Record<string, string> {
  const entries = Object.entries(headers);
  if (entries.length > EMAIL_LIMITS.headers)
    throw invalid('headers', `must have at most ${EMAIL_LIMITS.headers} entries`);
  for (const [name, value] of entries) {
    if (!/^[!-9;-~]{1,100}$/.test(name)) throw invalid(`headers.${name}`, 'is not a valid header name');
    const lower = name.toLowerCase();
    if (OWNED_HEADERS.has(lower) || lower.startsWith('x-postline-')) {
      throw invalid(
        `headers.${name}`,
        'is set by Postline and cannot be overridden (use the request fields instead)',
      );
    }
    if (/[\r\n\0]/.test(value)) throw invalid(`headers.${name}`, 'must not contain line breaks (CR or LF)');
    if (value.length > EMAIL_LIMITS.headerValueChars) {
      throw invalid(`headers.${name}`, `must be at most ${EMAIL_LIMITS.headerValueChars} characters`);
    }
  }
  return headers;
}

function decodeAttachments(input: NonNullable<SendEmailInput['attachments']>, at: number) {
  let total = 0;
  return input.map((a, i) => {
    // Whitespace (line-wrapped base64) goes first, so the check is one linear pass.
    const compact = a.content.replace(/\s+/g, '');
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) throw invalid(`attachments[${i}].content`, 'must be base64');
    const bytes = Buffer.from(compact, 'base64');
    total += bytes.length;
    if (total > EMAIL_LIMITS.attachmentBytes) {
      throw invalid(
        'attachments',
        `must be at most ${EMAIL_LIMITS.attachmentBytes / 1024 / 1024} MB in all (decoded)`,
      );
    }
    return {
      id: newId('att', at),
      filename: a.filename,
      contentType: a.content_type ?? 'application/octet-stream',
      ...(a.content_id !== undefined && { contentId: a.content_id }),
      bytes,
    };
  });
}

/** `send_at` as an ISO string, once it is in the future and within the horizon; for emails and broadcasts. */
export function checkSendAt(sendAt: string | undefined, now: Date): string | undefined {
  if (sendAt === undefined) return undefined;
  const t = Date.parse(sendAt);
  if (t <= now.getTime()) throw invalid('send_at', 'must be in the future');
  if (t > now.getTime() + EMAIL_LIMITS.sendAtHorizonDays * 86_400_000) {
    throw invalid('send_at', `must be at most ${EMAIL_LIMITS.sendAtHorizonDays} days ahead`);
  }
  return new Date(t).toISOString();
}

/** The refusal of a live send from `name`, a domain of the organization (`known`) or not. */
export const domainNotVerified = (name: string, known: boolean) =>
  new AppError(
    'domain_not_verified',
    known
      ? `\`from\`: domain ${name} is not verified yet; verify its DNS records before sending with a live key.`
      : `\`from\`: ${name} is not a domain of this organization; add and verify it first.`,
  );

/**
 * The sending domain. Live: a domain of the organization that can send (verified). Test: any domain; a
 * registered test-mode domain of that name is linked when there is one. A key restricted to a domain sends
 * only from it (403).
 */
async function sendingDomain(services: Services, auth: AuthContext, from: Mailbox) {
  const name = domainOf(from.address);
  const domain = await services.caches.sendingDomains.get(auth, name);
  if (auth.domainId) {
    const id = auth.domainId;
    const allowed = await services.caches.domainsById.get(auth, id);
    if (!allowed || allowed.name !== name) {
      throw new AppError(
        'domain_not_allowed',
        `This API key may only send from ${allowed?.name ?? `domain ${auth.domainId}`}.`,
      );
    }
  }
  if (auth.mode === 'live' && !domain?.canSendLive) throw domainNotVerified(name, Boolean(domain));
  return { domainId: domain?.id ?? null, domainName: domain?.name ?? name };
}

async function render(services: Services, auth: AuthContext, input: SendEmailInput) {
  if (input.template_id === undefined) {
    if (input.template_data !== undefined) throw invalid('template_data', 'needs `template_id`');
    if (!input.subject) throw invalid('subject', 'is required (or send a `template_id`)');
    if (/[\r\n]/.test(input.subject)) throw invalid('subject', 'must not contain line breaks');
    if (!input.html && !input.text)
      throw invalid('html', 'an `html` or `text` body (or a `template_id`) is required');
    return { subject: input.subject, html: input.html ?? null, text: input.text ?? null };
  }
  if (input.html !== undefined || input.text !== undefined) {
    throw invalid('template_id', 'cannot be combined with `html` or `text`');
  }
  try {
    if (input.subject && /[\r\n]/.test(input.subject))
      throw invalid('subject', 'must not contain line breaks');
    const r = await renderPublished(
      services,
      auth.orgId,
      auth.mode,
      input.template_id,
      input.template_data ?? {},
    );
    return {
      subject: input.subject || r.subject,
      html: r.html,
      text: r.text,
      templateId: input.template_id,
      templateVersionId: r.templateVersionId,
    };
  } catch (error) {
    // A template the sender cannot use is a problem with this request's fields: 422, not 404.
    if (error instanceof AppError && error.code === 'not_found') throw invalid('template_id', error.message);
    throw error;
  }
}

/** From memory for an organization with a short list (most have one), else one batched query per address. */
async function suppressed(services: Services, auth: AuthContext, list: Mailbox[]) {
  const unique = [...new Set(list.map((m) => m.address.toLowerCase()))];
  const small = await services.caches.suppressions.get(auth);
  const flags = small
    ? unique.map((a) => small.has(a))
    : await Promise.all(unique.map((a) => services.caches.suppressed.get(auth, a)));
  return new Set(unique.filter((_, i) => flags[i]));
}

/**
 * The recipients left once the suppression list is applied, formatted, and the addresses it removed; refused when
 * none is left.
 */
async function deliverable(
  services: Services,
  auth: AuthContext,
  to: Mailbox[],
  cc: Mailbox[],
  bcc: Mailbox[],
) {
  const blocked = await suppressed(services, auth, [...to, ...cc, ...bcc]);
  const keep = (list: Mailbox[]) =>
    list.filter((m) => !blocked.has(m.address.toLowerCase())).map(formatMailbox);
  const recipients = { to: keep(to), cc: keep(cc), bcc: keep(bcc), suppressedRecipients: [...blocked] };
  if (recipients.to.length + recipients.cc.length + recipients.bcc.length === 0) {
    throw new AppError(
      'all_recipients_suppressed',
      `Every recipient is on the suppression list: ${[...blocked].join(', ')}.`,
    );
  }
  return recipients;
}

/** Validates a send request and does its look-ups; throws an AppError naming the field. No event is written. */
export async function prepareEmail(
  services: Services,
  auth: AuthContext,
  input: SendEmailInput,
  /** The id the email gets: chosen in advance under an Idempotency-Key; a new one by default. */
  emailId?: string,
): Promise<PreparedEmail> {
  const now = services.clock.now();
  const from = mailboxes('from', input.from)[0];
  const to = mailboxes('to', input.to);
  const cc = mailboxes('cc', input.cc);
  const bcc = mailboxes('bcc', input.bcc);
  const replyTo = mailboxes('reply_to', input.reply_to);
  if (to.length === 0) throw invalid('to', 'needs at least one recipient');
  if (to.length + cc.length + bcc.length > EMAIL_LIMITS.recipients) {
    throw invalid('to', `at most ${EMAIL_LIMITS.recipients} recipients in all (to, cc and bcc)`);
  }
  const sendAt = checkSendAt(input.send_at, now);
  const headers = checkHeaders(input.headers ?? {});
  const attachments = decodeAttachments(input.attachments ?? [], now.getTime());
  const domain = await sendingDomain(services, auth, from);
  const body = await render(services, auth, input);
  const recipients = await deliverable(services, auth, to, cc, bcc);
  return {
    content: {
      emailId: emailId ?? newId('em', now.getTime()),
      orgId: auth.orgId,
      mode: auth.mode,
      from: formatMailbox(from),
      ...recipients,
      replyTo: replyTo.map(formatMailbox),
      subject: body.subject,
      html: body.html,
      text: body.text,
      headers,
      tags: input.tags ?? [],
      ...domain,
      ...('templateId' in body && { templateId: body.templateId, templateVersionId: body.templateVersionId }),
      createdAt: now.toISOString(),
    },
    attachments,
    ...(sendAt && { sendAt }),
  };
}

/**
 * Validates a message submitted over SMTP and does its look-ups, with the same rules as a request: the From
 * domain, the recipient limit, suppressions. Recipients are the envelope's: those also named in To or Cc keep
 * their place there, the others are Bcc.
 */
export async function prepareSubmitted(
  services: Services,
  auth: AuthContext,
  message: SubmittedMessage,
  emailId: string,
): Promise<PreparedEmail> {
  const now = services.clock.now();
  const from = mailboxes('from', message.from)[0];
  const envelope = mailboxes('to', message.envelopeTo);
  if (envelope.length === 0) throw invalid('to', 'needs at least one recipient');
  if (envelope.length > EMAIL_LIMITS.recipients) {
    throw invalid('to', `at most ${EMAIL_LIMITS.recipients} recipients in all (to, cc and bcc)`);
  }
  const named = (list: string[]) =>
    new Map(
      list.flatMap((raw) => {
        const m = parseMailbox(raw);
        return 'error' in m ? [] : [[m.address.toLowerCase(), m] as const];
      }),
    );
  const headerTo = named(message.to);
  const headerCc = named(message.cc);
  const inHeader = (m: Mailbox, header: Map<string, Mailbox>) => header.get(m.address.toLowerCase());
  const to = envelope.flatMap((m) => inHeader(m, headerTo) ?? []);
  const cc = envelope.flatMap((m) => (inHeader(m, headerTo) ? [] : (inHeader(m, headerCc) ?? [])));
  const bcc = envelope.filter((m) => !inHeader(m, headerTo) && !inHeader(m, headerCc));
  const sendAt = checkSendAt(message.sendAt, now);
  const domain = await sendingDomain(services, auth, from);
  const recipients = await deliverable(services, auth, to, cc, bcc);
  return {
    content: {
      emailId,
      orgId: auth.orgId,
      mode: auth.mode,
      from: formatMailbox(from),
      ...recipients,
      replyTo: message.replyTo,
      subject: message.subject,
      html: message.html,
      text: message.text,
      headers: {},
      tags: message.tags,
      ...domain,
      createdAt: now.toISOString(),
    },
    attachments: message.attachments.map((a) => ({ id: newId('att', now.getTime()), ...a })),
    raw: { bytes: message.raw, messageId: message.messageId },
    ...(sendAt && { sendAt }),
  };
}
