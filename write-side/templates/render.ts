import { TEMPLATE_LIMITS } from '../../domain/templates/content-rules.ts';
import { partRenderer } from '../../domain/templates/sandbox.ts';
import { AppError, notFound } from '../../platform/errors.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import type { PublishedTemplate as PublishedVersion } from '../look-ups.ts';

export interface RenderedTemplate {
  subject: string;
  /** Null when the template has no such part. */
  html: string | null;
  text: string | null;
  /** The version rendered, for the email to record. */
  templateVersionId: string;
}

const renderError = (message: string) => new AppError('template_render_error', message);

const TYPE_CHECKS: Record<string, [(v: unknown) => boolean, string]> = {
  string: [(v) => typeof v === 'string' || typeof v === 'number', 'a string'],
  number: [(v) => typeof v === 'number', 'a number'],
  boolean: [(v) => typeof v === 'boolean', 'a boolean'],
  object: [(v) => typeof v === 'object' && v !== null && !Array.isArray(v), 'an object'],
  array: [(v) => Array.isArray(v), 'an array'],
};

/**
 * Required variables present (null counts as missing), declared types respected; undeclared keys are ignored.
 * Only the data's own keys count: a variable named `constructor` or `toString` is not given by Object's prototype.
 */
function checkData(version: PublishedVersion, data: Record<string, unknown>) {
  const given = (name: string) => (Object.hasOwn(data, name) ? data[name] : undefined);
  const missing = version.variables.filter(
    (v) => v.required && (given(v.name) === undefined || given(v.name) === null),
  );
  if (missing.length) {
    throw renderError(
      `Missing required template variable${missing.length > 1 ? 's' : ''}: ${missing.map((v) => `\`${v.name}\``).join(', ')}`,
    );
  }
  for (const v of version.variables) {
    const value = given(v.name);
    const check = TYPE_CHECKS[v.type];
    if (value === undefined || value === null || !check) continue;
    if (!check[0](value)) throw renderError(`\`template_data.${v.name}\`: must be ${check[1]}`);
  }
}

/** The data with each fallback where the data does not give its variable, or gives null. */
function withFallbacks(fallbacks: PublishedVersion['variables'], data: Record<string, unknown>) {
  const missing = fallbacks.filter((v) => !Object.hasOwn(data, v.name) || data[v.name] === null);
  return missing.length ? { ...data, ...Object.fromEntries(missing.map((v) => [v.name, v.fallback])) } : data;
}

/** Renders a version with `data`: pure apart from the compile cache. */
export const renderVersion = (version: PublishedVersion, data: Record<string, unknown>): RenderedTemplate =>
  versionRenderer(version)(data);

/** A version's renderer, for a version rendered many times (a broadcast's): its parts are looked up once. */
export function versionRenderer(
  version: PublishedVersion,
): (data: Record<string, unknown>) => RenderedTemplate {
  const subjectOf = partRenderer(version.versionId, 'subject', version.subject);
  const parts = (['html', 'text'] as const).flatMap((part) => {
    const source = version[part];
    return source ? [{ part, render: partRenderer(version.versionId, part, source) }] : [];
  });
  const fallbacks = version.variables.filter((v) => v.fallback !== undefined);
  return (given) => {
    if (typeof given !== 'object' || given === null || Array.isArray(given))
      throw renderError('`template_data`: must be an object');
    const data = withFallbacks(fallbacks, given);
    checkData(version, data);
    const subject = subjectOf(data);
    if (/[\r\n]/.test(subject)) {
      throw renderError(
        'The rendered subject contains a line break (CR or LF); check the variables used in `subject`.',
      );
    }
    if (subject.length > TEMPLATE_LIMITS.renderedSubjectChars) {
      throw renderError(
        `The rendered subject is longer than ${TEMPLATE_LIMITS.renderedSubjectChars} characters.`,
      );
    }
    const out: RenderedTemplate = { subject, html: null, text: null, templateVersionId: version.versionId };
    for (const { part, render } of parts) {
      const rendered = render(data);
      if (Buffer.byteLength(rendered) > TEMPLATE_LIMITS.renderedBytes) {
        throw renderError(
          `The rendered \`${part}\` is larger than ${TEMPLATE_LIMITS.renderedBytes / 1024 / 1024} MB.`,
        );
      }
      out[part] = rendered;
    }
    return out;
  };
}

/**
 * Renders the published version of a template, for the render endpoint and the sending path.
 * Throws `not_found` (unknown, deleted, or another organization's or mode's), `template_not_published`,
 * or `template_render_error` (missing required variables, wrong types, limits, a broken subject).
 */
export async function renderPublished(
  services: Pick<Services, 'db' | 'lookUps'>,
  orgId: string,
  mode: Mode,
  templateId: string,
  /** `template_data`; absent counts as `{}` (so required variables are reported by name). */
  data: Record<string, unknown> | undefined,
  /** Render this version of the template instead of the published one (the dashboard's preview of a draft). */
  versionId?: string,
): Promise<RenderedTemplate> {
  const found = await services.lookUps.findPublishedVersion(
    services.db,
    { orgId, mode },
    templateId,
    versionId,
  );
  if (found.status === 'not_found')
    throw versionId === undefined
      ? notFound('Template', templateId)
      : notFound('Template version', `${versionId} of template ${templateId}`);
  if (found.status === 'not_published') {
    throw new AppError(
      'template_not_published',
      `Template ${templateId} has no published version; publish it first.`,
    );
  }
  return renderVersion(found.version, data ?? {});
}
