import { createHash } from 'node:crypto';
import MailComposer from 'nodemailer/lib/mail-composer';
import { OWNED_HEADERS } from '../../../domain/emails/owned-headers.ts';
import { signMessage } from './dkim.ts';
import type { OutboundMessage } from './message.ts';

/** The API refuses custom headers Postline owns; here they are dropped too, as a second line of defence. */
function customHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!/^[!-9;-~]+$/.test(name) || OWNED_HEADERS.has(name.toLowerCase())) continue;
    out[name] = value.replace(/[\r\n]+/g, ' ');
  }
  return out;
}

/**
 * Builds the RFC 5322 message: stable Message-ID and Date from the input, MIME boundaries derived from the
 * Message-ID (so the same email composes to the same bytes on every attempt), Bcc only in the envelope,
 * DKIM-signed when a key is given (and with Ed25519 beside RSA when the domain has one). A submitted message (`raw`) is only signed.
 */
export async function composeMessage(message: OutboundMessage): Promise<Buffer> {
  const raw = message.raw ?? (await compose(message));
  const signed = message.dkim ? await signMessage(raw, message.dkim, message.date) : raw;
  // Two independent signatures: neither covers the other's DKIM-Signature field, so each verifies alone.
  return message.dkimEd25519 ? signMessage(signed, message.dkimEd25519, message.date) : signed;
}

function compose(message: OutboundMessage): Promise<Buffer> {
  const composer = new MailComposer({
    from: message.from,
    to: message.to.length > 0 ? message.to : undefined,
    cc: message.cc.length > 0 ? message.cc : undefined,
    replyTo: message.replyTo.length > 0 ? message.replyTo : undefined,
    subject: message.subject,
    text: message.text,
    html: message.html,
    messageId: message.messageId,
    date: message.date,
    headers: customHeaders(message.headers),
    attachments: message.attachments.map((a) => ({
      filename: a.filename,
      contentType: a.contentType,
      content: a.content,
      ...(a.contentId
        ? { cid: a.contentId.replace(/^<|>$/g, ''), contentDisposition: 'inline' as const }
        : {}),
    })),
    baseBoundary: createHash('sha256').update(message.messageId).digest('hex').slice(0, 16),
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return composer.compile().build();
}
