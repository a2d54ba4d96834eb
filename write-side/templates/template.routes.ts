import { z } from 'zod';
import { TEMPLATE_NAME_MAX } from '../../domain/templates/template.decider.ts';
import { templateStream } from '../../domain/templates/template.events.ts';
import { RenderedTemplate, Template } from '../../domain/templates/templates.response.ts';
import { metaOf } from '../../platform/auth/auth-context.ts';
import { commandRoutes } from '../../platform/http/command-routes.ts';
import { resourceName } from '../../platform/http/route-schema.ts';
import { type ApiRouter, ok } from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import { idShape } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { renderPublished } from './render.ts';
import {
  createTemplate,
  deleteTemplate,
  duplicateTemplate,
  publishTemplate,
  updateTemplate,
} from './template.commands.ts';

/** Projections that serve what these routes change; a response waits for them (read-your-writes). */
export const TEMPLATE_PROJECTIONS = ['templates'];

const name = resourceName(TEMPLATE_NAME_MAX);
/**
 * Resend's shape of a variable, `{ key, type, fallback_value }` (its SDK's `templates.create`): `key` is the name,
 * `fallback_value` the fallback, and a variable without one is required, as in Resend.
 */
const resendsVariable = (v: unknown) => {
  if (typeof v !== 'object' || v === null || !('key' in v) || 'name' in v) return v;
  const { key, fallback_value, ...rest } = v as Record<string, unknown>;
  return {
    name: key,
    required: fallback_value === undefined || fallback_value === null,
    ...rest,
    ...(fallback_value !== undefined && fallback_value !== null && { fallback: fallback_value }),
  };
};
const variable = z.preprocess(
  resendsVariable,
  z
    .object({
      name: z.string().min(1, 'is required').max(100, 'must be at most 100 characters'),
      type: z.enum(['string', 'number', 'boolean', 'object', 'array']).default('string'),
      required: z.boolean().default(false),
      fallback: z
        .union([z.string().max(1000, 'must be at most 1000 characters'), z.number(), z.boolean()], {
          error: 'must be a string, a number or a boolean',
        })
        .optional(),
    })
    .strict(),
);
// Sizes and Handlebars syntax are the decider's rules (content-rules.ts); here only the shapes.
const content = {
  subject: z.string().min(1, 'is required'),
  html: z.string().nullish(),
  text: z.string().nullish(),
  variables: z.array(variable).max(100, 'at most 100 variables'),
};

const createBody = z
  .object({
    name,
    engine: z
      .enum(['handlebars'], { error: 'must be `handlebars` (the only engine supported)' })
      .default('handlebars'),
    ...content,
    variables: content.variables.default([]),
  })
  .strict();

const updateBody = z
  .object({
    name: name.optional(),
    subject: content.subject.optional(),
    html: content.html,
    text: content.text,
    variables: content.variables.optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'give at least one of name, subject, html, text, variables');

const duplicateBody = z.object({ name: name.optional() }).strict();

const renderBody = z
  .object({
    template_id: z.string().min(1, 'is required'),
    /** A version of the template to render instead of the published one (any status: a draft's preview). */
    version_id: z.string().min(1, 'must not be empty').optional(),
    template_data: z.record(z.string(), z.unknown()),
  })
  .strict();

export function templateCommandRoutes(api: ApiRouter, services: Services) {
  const templates = commandRoutes(api, services, {
    tag: 'Templates',
    name: 'Template',
    param: 'template_id',
    idPattern: idShape('tmpl'),
    projections: TEMPLATE_PROJECTIONS,
    read: (tenant, id) => services.lookUps.getTemplate(services.db, tenant, id),
    response: Template,
    idempotent: { idPrefix: 'tmpl', stream: templateStream },
  });

  // Registered first: `/templates/render` is a fixed path and must never be taken for a template id.
  api.post(
    '/templates/render',
    async (req) => {
      const body = parse(renderBody, req.body);
      const rendered = await renderPublished(
        services,
        req.auth.orgId,
        req.auth.mode,
        body.template_id,
        body.template_data,
        body.version_id,
      );
      return ok({
        subject: rendered.subject,
        html: rendered.html,
        text: rendered.text,
        template_version_id: rendered.templateVersionId,
      });
    },
    {
      schema: {
        tag: 'Templates',
        summary: 'Render a template: its published version, or the version `version_id` names',
        body: renderBody,
        responses: { 200: RenderedTemplate },
        errors: ['not_found', 'template_not_published', 'template_render_error'],
      },
    },
  );

  templates.create(
    '/templates',
    { summary: 'Create a template', body: createBody, errors: ['plan_limit_exceeded', 'conflict'] },
    async (req) => {
      const body = parse(createBody, req.body);
      const { templateId: id, position } = await createTemplate(
        services,
        metaOf(req.auth),
        req.auth.plan,
        {
          name: body.name,
          engine: body.engine,
          content: {
            subject: body.subject,
            html: body.html ?? null,
            text: body.text ?? null,
            variables: body.variables,
          },
        },
        req.idempotency?.ids[0],
      );
      return { id, position };
    },
  );

  templates.change(
    'PATCH',
    '/templates/:template_id',
    { summary: 'Change the draft of a template', body: updateBody, errors: ['conflict'] },
    (req, id) => {
      const { name, ...changes } = parse(updateBody, req.body);
      return updateTemplate(services, metaOf(req.auth), id, { name, changes: dropUndefined(changes) });
    },
  );

  templates.change(
    'POST',
    '/templates/:template_id/publish',
    { summary: 'Publish the draft', errors: ['conflict'] },
    (req, id) => publishTemplate(services, metaOf(req.auth), id),
  );

  templates.create(
    '/templates/:template_id/duplicate',
    { summary: 'Duplicate a template', body: duplicateBody, errors: ['plan_limit_exceeded', 'conflict'] },
    async (req) => {
      const sourceId = await templates.id(req);
      const body = parse(duplicateBody, req.body);
      const { templateId: id, position } = await duplicateTemplate(
        services,
        metaOf(req.auth),
        req.auth.plan,
        sourceId,
        body.name,
        req.idempotency?.ids[0],
      );
      return { id, position };
    },
  );

  templates.delete(
    '/templates/:template_id',
    { summary: 'Delete a template', errors: ['conflict'] },
    deleteTemplate,
  );
}

/** PATCH semantics: an absent field keeps its value, `null` (html, text) removes the part. */
function dropUndefined<T extends Record<string, unknown>>(o: T) {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}
