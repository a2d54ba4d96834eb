import { z } from 'zod';
import { resendsName, unionError } from '../../platform/http/route-schema.ts';
import { idShape } from '../../platform/ids.ts';
import { MAX_MAILBOX_CHARS } from './addresses.ts';
import { fitFileName, UNFIT_IN_FILE_NAME } from './attachment-types.ts';
import { EMAIL_LIMITS } from './limits.ts';
import { sendTime } from './send-time.ts';

const mailbox = z.string().max(MAX_MAILBOX_CHARS, `must be at most ${MAX_MAILBOX_CHARS} characters`);

const addressList = z.union(
  [
    mailbox,
    z
      .array(mailbox)
      .max(
        EMAIL_LIMITS.recipients,
        `must have at most ${EMAIL_LIMITS.recipients} addresses (and at most ${EMAIL_LIMITS.recipients} recipients in to, cc and bcc)`,
      ),
  ],
  { error: unionError('must be an address or an array of addresses') },
);
const bodyText = z.string().refine((s) => Buffer.byteLength(s) <= EMAIL_LIMITS.bodyBytes, {
  message: `must be at most ${EMAIL_LIMITS.bodyBytes / 1024 / 1024} MB`,
});

export const attachmentInput = z
  .object({
    filename: z
      .string()
      .min(1, 'is required')
      .max(255, 'must be at most 255 characters')
      .refine((s) => !UNFIT_IN_FILE_NAME.test(s), { message: 'must not contain line breaks or slashes' })
      .meta({ description: 'Required with content; with path, the last segment of its URL by default.' })
      .optional(),
    content: z
      .string()
      .min(1, 'is required')
      .meta({ description: 'The file, base64; required unless path is given.' })
      .optional(),
    /** Or where it is (Resend's field): an http(s) URL Postline fetches when it accepts the email. */
    path: z
      .url({ protocol: /^https?$/, error: 'must be an http or https URL' })
      .max(2048, 'must be at most 2048 characters')
      .meta({
        description: 'Instead of content: the http(s) URL of the file, fetched when the email is accepted.',
      })
      .optional(),
    content_type: z
      .string()
      .regex(
        /^[a-z0-9!#$&^_.+-]{1,127}\/[a-z0-9!#$&^_.+-]{1,127}$/i,
        'must be a media type such as application/pdf',
      )
      .optional(),
    content_id: z
      .string()
      .regex(/^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.@-]{1,200}$/, 'must be 1 to 200 characters without spaces or <>')
      .optional(),
  })
  .strict()
  .superRefine((a, ctx) => {
    if (a.content !== undefined && a.path !== undefined)
      ctx.addIssue({ code: 'custom', path: ['path'], message: 'give content or path, not both' });
    else if (a.content === undefined && a.path === undefined)
      ctx.addIssue({ code: 'custom', path: ['content'], message: 'is required (or path)' });
    if (a.filename === undefined && a.path === undefined)
      ctx.addIssue({ code: 'custom', path: ['filename'], message: 'is required' });
  });

/**
 * An attachment's file name: its own, or the last segment of its `path` (`invoice.pdf` of
 * `https://files.example/a/invoice.pdf?sig=…`), made fit to keep (fitFileName).
 */
export function attachmentName(a: { filename?: string; path?: string }): string {
  if (a.filename !== undefined) return a.filename;
  const segment = new URL(a.path!).pathname.split('/').at(-1) ?? '';
  let name: string;
  try {
    name = decodeURIComponent(segment);
  } catch {
    name = segment;
  }
  return fitFileName(name);
}

const TAG = `[A-Za-z0-9_-]{1,${EMAIL_LIMITS.tagChars}}`;
const tagRule = `1 to ${EMAIL_LIMITS.tagChars} characters of A-Z a-z 0-9 _ -`;
const tagString = z.string().regex(new RegExp(`^${TAG}$`), `must be ${tagRule}`);
/**
 * Resend's tag shape: `{name, value}`, kept as the tag `name:value` (`name` alone without a value). The list is
 * turned into strings after the union, so that a bad name or value is reported as such.
 */
const tagObject = z
  .object({
    name: tagString,
    value: z
      .string()
      .regex(
        new RegExp(`^(${TAG})?$`),
        `must be at most ${EMAIL_LIMITS.tagChars} characters of A-Z a-z 0-9 _ -`,
      )
      .optional(),
  })
  .strict();
const tagList = z
  .array(
    z.union([tagString, tagObject], {
      error: unionError(`must be a string of ${tagRule}, or {name, value}`),
    }),
  )
  .max(EMAIL_LIMITS.tags, `must have at most ${EMAIL_LIMITS.tags} tags`)
  .transform((tags) =>
    tags.map((t) => (typeof t === 'string' ? t : t.value ? `${t.name}:${t.value}` : t.name)),
  );

/**
 * Resend's names for fields Postline has under its own (docs/emails.md lists them): `scheduled_at` for `send_at`,
 * `template: {id, variables}` for `template_id` and `template_data`. Given both ways, `scheduled_at` is refused by
 * its name (resendsName), the `template` object left in place, where the strict schema names it.
 */
function resendAliases(body: unknown, ctx: z.RefinementCtx): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const out = { ...(resendsName('scheduled_at', 'send_at')(body, ctx) as Record<string, unknown>) };
  const template = out.template as { id?: unknown; variables?: unknown } | undefined;
  if (template && typeof template === 'object' && !('template_id' in out) && !('template_data' in out)) {
    const { id, variables, ...rest } = template;
    if (Object.keys(rest).length === 0) {
      out.template_id = id;
      if (variables !== undefined) out.template_data = variables;
      delete out.template;
    }
  }
  return out;
}

export const sendEmailInput = z.preprocess(
  resendAliases,
  z
    .object({
      from: mailbox.min(1, 'is required'),
      to: addressList,
      cc: addressList.optional(),
      bcc: addressList.optional(),
      reply_to: addressList.optional(),
      subject: z
        .string()
        .max(EMAIL_LIMITS.subjectChars, `must be at most ${EMAIL_LIMITS.subjectChars} characters`)
        .optional(),
      html: bodyText.optional(),
      text: bodyText.optional(),
      template_id: z.string().regex(idShape('tmpl'), 'must be a template id (tmpl_…)').optional(),
      template_data: z.record(z.string(), z.unknown()).optional(),
      headers: z.record(z.string(), z.string()).optional(),
      tags: tagList.optional(),
      attachments: z
        .array(attachmentInput)
        .max(EMAIL_LIMITS.attachments, `must have at most ${EMAIL_LIMITS.attachments} items`)
        .optional(),
      send_at: sendTime.optional(),
      topic_id: z.string().regex(idShape('top'), 'must be a topic id (top_…)').nullable().optional().meta({
        description: 'The topic the email is about: only the recipients it reaches get it (docs/emails.md).',
      }),
    })
    .strict()
    .meta({
      id: 'SendEmailRequest',
      description:
        'Resend’s names are taken too (`scheduled_at`, tag objects, `template: {id, variables}`): docs/resend.md.',
      example: {
        from: 'Acme <hello@acme.example>',
        to: ['delivered@simulator.postline.dev'],
        subject: 'Welcome',
        html: '<p>Welcome to Acme</p>',
        tags: ['welcome'],
      },
    }),
);

export type SendEmailInput = z.infer<typeof sendEmailInput>;

export const updateEmailInput = z.preprocess(
  resendAliases,
  z
    .object({
      send_at: sendTime,
    })
    .strict(),
);
