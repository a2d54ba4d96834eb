import { AppError } from '../../platform/errors.ts';
import type { TemplateContent } from './template.events.ts';
import { analyseTemplate } from './template-ast.ts';

/**
 * Rules for what a template version may hold, pure so the decider applies them itself. Sizes keep one
 * template and one rendered email within what the event store, the read model and a mail server handle well.
 */
export const TEMPLATE_LIMITS = {
  /** Per source part (html, text), in UTF-8 bytes. */
  partBytes: 512 * 1024,
  /** The subject source, in characters. */
  subjectChars: 1000,
  variables: 100,
  /** Per rendered part (html, text), in UTF-8 bytes. */
  renderedBytes: 1024 * 1024,
  /** A rendered subject, in characters (folded into header lines when sent). */
  renderedSubjectChars: 2000,
} as const;

export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,99}$/;

const invalid = (message: string) => new AppError('validation_error', message);

/**
 * The subject an email is sent with, once rendered: never blank (a template's subject source must not be, but its
 * variables can render to nothing; mail without a subject reads as spam). 422 `template_render_error`.
 */
export function sentSubject(subject: string): string {
  if (!subject.trim())
    throw new AppError(
      'template_render_error',
      'The rendered subject is empty; give the data its variables need, or a `subject` of its own.',
    );
  return subject;
}

export function checkTemplateContent(content: TemplateContent): void {
  if (!content.subject.trim()) throw invalid('`subject`: must not be empty');
  if (content.subject.length > TEMPLATE_LIMITS.subjectChars) {
    throw invalid(`\`subject\`: must be at most ${TEMPLATE_LIMITS.subjectChars} characters`);
  }
  if (/[\r\n]/.test(content.subject)) throw invalid('`subject`: must be a single line (no CR or LF)');
  if (!content.html && !content.text) throw invalid('`html`: give html, text or both');
  for (const part of ['html', 'text'] as const) {
    const source = content[part];
    if (source && Buffer.byteLength(source) > TEMPLATE_LIMITS.partBytes) {
      throw invalid(`\`${part}\`: must be at most ${TEMPLATE_LIMITS.partBytes / 1024} KB`);
    }
  }

  if (content.variables.length > TEMPLATE_LIMITS.variables) {
    throw invalid(`\`variables\`: at most ${TEMPLATE_LIMITS.variables} variables`);
  }
  const declared = new Set<string>();
  content.variables.forEach((v, i) => {
    if (!VARIABLE_NAME.test(v.name)) {
      throw invalid(
        `\`variables[${i}].name\`: must start with a letter or _ and hold only letters, digits and _`,
      );
    }
    if (declared.has(v.name)) throw invalid(`\`variables[${i}].name\`: \`${v.name}\` is declared twice`);
    declared.add(v.name);
    if (v.fallback === undefined) return;
    // A fallback stands in for the value: it has the variable's type, and a variable that has one is never missing.
    if (typeof v.fallback !== v.type)
      throw invalid(`\`variables[${i}].fallback\`: must be a ${v.type}, as the variable is`);
    if (v.required) throw invalid(`\`variables[${i}].fallback\`: a required variable has no fallback`);
  });

  for (const part of ['subject', 'html', 'text'] as const) {
    const source = content[part];
    if (!source) continue;
    for (const [name, loc] of analyseTemplate(part, source)) {
      if (!declared.has(name)) {
        throw invalid(
          `\`${part}\`: variable \`${name}\` at line ${loc.line}, column ${loc.column} is not declared in \`variables\``,
        );
      }
    }
  }
}
