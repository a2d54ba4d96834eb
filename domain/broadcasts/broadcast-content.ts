import Handlebars from 'handlebars';
import { AppError } from '../../platform/errors.ts';
import type { Impressum } from '../domains/domain.events.ts';
import { TEMPLATE_LIMITS } from '../templates/content-rules.ts';
import type { TemplateVariable } from '../templates/template.events.ts';
import { analyseTemplate } from '../templates/template-ast.ts';
import type { BroadcastContent } from './broadcast.events.ts';

/**
 * What a broadcast's own content may hold (pure: the decider's caller checks it before any event): the variables a
 * broadcast renders with are fixed, `contact` (email, first_name, last_name, properties) and `unsubscribe_url`, so a
 * source that reads anything else is refused when it is saved, with the line and column, as a template's is.
 */
export const BROADCAST_VARIABLES = new Set(['contact', 'unsubscribe_url']);

const invalid = (message: string) => new AppError('validation_error', message);

export function checkBroadcastContent(content: BroadcastContent): void {
  if (content.templateId) {
    if (content.html !== null || content.text !== null)
      throw invalid('`template_id`: cannot be combined with `html` or `text`');
  } else {
    if (!content.subject) throw invalid('`subject`: is required (or give a `template_id`)');
    if (!content.html && !content.text)
      throw invalid('`html`: an `html` or `text` body (or a `template_id`) is required');
  }
  if (content.subject !== null && /[\r\n]/.test(content.subject))
    throw invalid('`subject`: must be a single line (no CR or LF)');
  if (content.subject !== null && content.subject.length > TEMPLATE_LIMITS.subjectChars)
    throw invalid(`\`subject\`: must be at most ${TEMPLATE_LIMITS.subjectChars} characters`);
  for (const part of ['subject', 'html', 'text'] as const) {
    const source = content[part];
    if (!source) continue;
    if (part !== 'subject' && Buffer.byteLength(source) > TEMPLATE_LIMITS.partBytes)
      throw invalid(`\`${part}\`: must be at most ${TEMPLATE_LIMITS.partBytes / 1024} KB`);
    for (const [name, loc] of analyseTemplate(part, source)) {
      if (!BROADCAST_VARIABLES.has(name))
        throw invalid(
          `\`${part}\`: variable \`${name}\` at line ${loc.line}, column ${loc.column} is not available; a broadcast renders with \`contact\` and \`unsubscribe_url\``,
        );
    }
  }
}

/** The type each variable a broadcast gives has, as a template declares it. */
const GIVEN_TYPES: Record<string, TemplateVariable['type']> = {
  contact: 'object',
  unsubscribe_url: 'string',
};

/**
 * A template a broadcast is sent with must render with what a broadcast gives (`contact`, `unsubscribe_url`): a
 * variable it requires beyond those, or one of those declared with another type, would fail every contact's
 * email, so the send is refused instead (422 naming the variable).
 */
export function checkBroadcastTemplate(templateId: string, variables: TemplateVariable[]): void {
  for (const v of variables) {
    const given = GIVEN_TYPES[v.name];
    if (!given && v.required)
      throw invalid(
        `\`template_id\`: template ${templateId} requires the variable \`${v.name}\`, which a broadcast does not give; a broadcast renders with \`contact\` and \`unsubscribe_url\``,
      );
    if (given && v.type !== given)
      throw invalid(
        `\`template_id\`: template ${templateId} declares \`${v.name}\` as ${v.type}; a broadcast gives it as ${given === 'object' ? 'an object' : 'a string'}`,
      );
  }
}

/** The data a broadcast's sources (or its template) render with, for one contact. */
export interface RecipientData {
  contact: {
    email: string;
    first_name: string | null;
    last_name: string | null;
    properties: Record<string, string | number | boolean>;
  };
  unsubscribe_url: string;
}

const htmlEscape = (s: string) => Handlebars.Utils.escapeExpression(s);

/** The impressum's lines: who sends, and how to reach them. */
function impressumLines(i: Impressum): string[] {
  return [
    i.company_name,
    i.representative && `Represented by ${i.representative}`,
    `${i.address}, ${i.country}`,
    [i.email, i.phone].filter(Boolean).join(' · '),
    i.register_entry,
    i.vat_id && `VAT ID ${i.vat_id}`,
  ].filter((l): l is string => Boolean(l));
}

/**
 * The footer every broadcast email carries: the sending domain's impressum (when it has one) and the unsubscribe
 * link. The link is marked so that click tracking leaves it as it is (tracking.ts).
 */
export function withFooter(
  body: { html: string | null; text: string | null },
  impressum: Impressum | null,
  unsubscribeUrl: string,
): { html: string | null; text: string | null } {
  const lines = impressum ? impressumLines(impressum) : [];
  const html =
    body.html === null
      ? null
      : (() => {
          const footer =
            `<div style="margin-top:32px;font-size:12px;color:#666">` +
            lines.map((l) => `${htmlEscape(l)}<br>`).join('') +
            `<a href="${htmlEscape(unsubscribeUrl)}" data-postline-untracked>Unsubscribe</a></div>`;
          return /<\/body>/i.test(body.html)
            ? body.html.replace(/<\/body>/i, () => `${footer}</body>`) // a function: the impressum's `$&` stays as written
            : body.html + footer;
        })();
  const text =
    body.text === null
      ? null
      : `${body.text}\n\n-- \n${[...lines, `Unsubscribe: ${unsubscribeUrl}`].join('\n')}\n`;
  return { html, text };
}

/** Hidden from the reader, shown by inbox lists after the subject: the style mail clients honour (Outlook too). */
const HIDDEN =
  'display:none;font-size:1px;line-height:1px;max-height:0;max-width:0;opacity:0;overflow:hidden;mso-hide:all';

/**
 * A broadcast's html with its preview text (the preheader) first: right after `<body …>` in a whole document,
 * else at the start; the text plain, escaped.
 */
export function withPreheader(html: string, previewText: string | null | undefined): string {
  if (!previewText) return html;
  const preheader = `<div style="${HIDDEN}">${htmlEscape(previewText)}</div>`;
  const body = /<body\b[^>]*>/i.exec(html);
  if (!body) return preheader + html;
  const at = body.index + body[0].length;
  return html.slice(0, at) + preheader + html.slice(at);
}
