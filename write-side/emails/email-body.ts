import { sentSubject } from '../../domain/templates/content-rules.ts';
import { AppError, invalidField } from '../../platform/errors.ts';
import type { Services } from '../../platform/services.ts';
import type { Tenant } from '../../platform/tenancy.ts';
import { renderPublished } from '../templates/render.ts';
import type { DraftBody, ReadyBody } from './email-draft.ts';

type Requested = Extract<DraftBody, { requested: unknown }>['requested'];

/**
 * The email's text: as the entrance gave it, or a request's fields checked (a subject and a body of its own, or a
 * template and its data) and the template's published version rendered.
 */
export async function emailBody(
  services: Pick<Services, 'db' | 'lookUps'>,
  tenant: Tenant,
  body: DraftBody,
): Promise<ReadyBody> {
  if ('ready' in body) return body.ready;
  const input = body.requested;
  if (input.templateId === undefined) {
    if (input.templateData !== undefined) throw invalidField('template_data', 'needs `template_id`');
    if (!input.subject) throw invalidField('subject', 'is required (or send a `template_id`)');
    if (/[\r\n]/.test(input.subject)) throw invalidField('subject', 'must not contain line breaks');
    if (!input.html && !input.text)
      throw invalidField('html', 'an `html` or `text` body (or a `template_id`) is required');
    return { subject: input.subject, html: input.html ?? null, text: input.text ?? null };
  }
  if (input.html !== undefined || input.text !== undefined) {
    throw invalidField('template_id', 'cannot be combined with `html` or `text`');
  }
  return rendered(services, tenant, input as Requested & { templateId: string });
}

async function rendered(
  services: Pick<Services, 'db' | 'lookUps'>,
  tenant: Tenant,
  input: Requested & { templateId: string },
): Promise<ReadyBody> {
  try {
    if (input.subject && /[\r\n]/.test(input.subject))
      throw invalidField('subject', 'must not contain line breaks');
    const r = await renderPublished(
      services,
      tenant.orgId,
      tenant.mode,
      input.templateId,
      input.templateData ?? {},
    );
    return {
      subject: sentSubject(input.subject || r.subject),
      html: r.html,
      text: r.text,
      templateId: input.templateId,
      templateVersionId: r.templateVersionId,
    };
  } catch (error) {
    // A template the sender cannot use is a problem with this request's fields: 422, not 404.
    if (error instanceof AppError && error.code === 'not_found')
      throw invalidField('template_id', error.message);
    throw error;
  }
}
