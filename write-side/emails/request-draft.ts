import { domainOf, formatMailbox, type Mailbox, parseMailbox } from '../../domain/emails/addresses.ts';
import { attachmentContentType } from '../../domain/emails/attachment-types.ts';
import { attachmentName, type SendEmailInput } from '../../domain/emails/request.ts';
import type { AuthContext } from '../../platform/auth/auth-context.ts';
import { invalidField } from '../../platform/errors.ts';
import type { EmailDraft } from './email-draft.ts';

function mailboxes(field: string, value: string | string[] | undefined): Mailbox[] {
  const list = value === undefined ? [] : Array.isArray(value) ? value : [value];
  return list.map((raw, i) => {
    const m = parseMailbox(raw);
    if ('error' in m) throw invalidField(Array.isArray(value) ? `${field}[${i}]` : field, m.error);
    return m;
  });
}

/**
 * A send request's JSON body (`POST /v1/emails`, an item of a batch) as a draft: its mailboxes parsed, `to`
 * required. `emailId`: chosen in advance under an Idempotency-Key (`resumed`: by an attempt that never finished).
 */
export function requestDraft(
  auth: AuthContext,
  input: SendEmailInput,
  chosen: { emailId: string; resumed: boolean; at?: Date },
  quota: EmailDraft['quota'],
): EmailDraft {
  const from = mailboxes('from', input.from)[0];
  const to = mailboxes('to', input.to);
  const cc = mailboxes('cc', input.cc);
  const bcc = mailboxes('bcc', input.bcc);
  const replyTo = mailboxes('reply_to', input.reply_to);
  if (to.length === 0) throw invalidField('to', 'needs at least one recipient');
  return {
    ...chosen,
    from: formatMailbox(from),
    to,
    cc,
    bcc,
    replyTo: replyTo.map(formatMailbox),
    body: {
      requested: {
        subject: input.subject,
        html: input.html,
        text: input.text,
        templateId: input.template_id,
        templateData: input.template_data,
      },
    },
    headers: input.headers ?? {},
    tags: input.tags ?? [],
    attachments: (input.attachments ?? []).map((a) => {
      const filename = attachmentName(a);
      return {
        filename,
        contentType: attachmentContentType(filename, a.content_type),
        ...(a.content_id !== undefined && { contentId: a.content_id }),
        content: a.path !== undefined ? { url: a.path } : { base64: a.content! },
      };
    }),
    ...(input.send_at !== undefined && { sendAt: input.send_at }),
    ...(input.topic_id && { topicId: input.topic_id }),
    sender: { key: auth, fromDomain: domainOf(from.address) },
    quota,
  };
}
