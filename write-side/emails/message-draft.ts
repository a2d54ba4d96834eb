import { domainOf, formatMailbox, type Mailbox, parseMailbox } from '../../domain/emails/addresses.ts';
import type { AuthContext } from '../../platform/auth/auth-context.ts';
import { invalidField } from '../../platform/errors.ts';
import type { EmailDraft } from './email-draft.ts';

/**
 * A message submitted over SMTP, as the relay parsed it (smtp/): recipients from the envelope, the rest from
 * the message's headers and MIME parts, and `raw`, the bytes to deliver.
 */
export interface SubmittedMessage {
  raw: Buffer;
  messageId: string;
  /** Its header section names a List-Unsubscribe of its own. */
  listUnsubscribe: boolean;
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
  /** X-Postline-Topic: the topic the email is about. */
  topicId?: string;
}

function mailbox(field: string, raw: string, i?: number): Mailbox {
  const m = parseMailbox(raw);
  if ('error' in m) throw invalidField(i === undefined ? field : `${field}[${i}]`, m.error);
  return m;
}

/**
 * A submitted message as a draft. Recipients are the envelope's: those also named in To or Cc keep their place
 * there, the others are Bcc. Its text is as the message has it; its bytes are what is delivered.
 */
export function messageDraft(
  auth: AuthContext,
  message: SubmittedMessage,
  chosen: { emailId: string; resumed: boolean },
  quota: EmailDraft['quota'],
): EmailDraft {
  const from = mailbox('from', message.from);
  const envelope = message.envelopeTo.map((raw, i) => mailbox('to', raw, i));
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
  return {
    ...chosen,
    from: formatMailbox(from),
    to: envelope.flatMap((m) => inHeader(m, headerTo) ?? []),
    cc: envelope.flatMap((m) => (inHeader(m, headerTo) ? [] : (inHeader(m, headerCc) ?? []))),
    bcc: envelope.filter((m) => !inHeader(m, headerTo) && !inHeader(m, headerCc)),
    replyTo: message.replyTo,
    body: { ready: { subject: message.subject, html: message.html, text: message.text } },
    headers: {},
    tags: message.tags,
    attachments: message.attachments.map(({ bytes, ...a }) => ({ ...a, content: bytes })),
    raw: { bytes: message.raw, messageId: message.messageId, listUnsubscribe: message.listUnsubscribe },
    ...(message.sendAt !== undefined && { sendAt: message.sendAt }),
    ...(message.topicId !== undefined && { topicId: message.topicId }),
    sender: { key: auth, fromDomain: domainOf(from.address) },
    quota,
  };
}
