import { z } from 'zod';
import { notFound } from '../../platform/errors.ts';
import { metaOf } from '../../platform/http/auth-context.ts';
import { Deleted } from '../../platform/http/route-schema.ts';
import {
  type ApiRequest,
  type ApiRouter,
  created,
  createdEarlier,
  ok,
  waitAfterCommit,
} from '../../platform/http/router.ts';
import { parse } from '../../platform/http/validate.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { getTemplate } from '../../read-side/templates/templates.queries.ts';
import { RenderedTemplate, Template } from '../../read-side/templates/templates.response.ts';
import { renderPublished } from './render.ts';
import {
  createTemplate,
  deleteTemplate,
  duplicateTemplate,
  publishTemplate,
  updateTemplate,
} from './template.commands.ts';
import { TEMPLATE_NAME_MAX } from './template.decider.ts';
import { templateStream } from './template.events.ts';

/** Projections that serve what these routes change; a response waits for them (read-your-writes). */
export const TEMPLATE_PROJECTIONS = ['templates'];

const TEMPLATE_ID = /^tmpl_[0-9a-z]{1,60}$/;

const name = z
  .string()
  .trim()
  .min(1, 'is required')
  .max(TEMPLATE_NAME_MAX, `must be at most ${TEMPLATE_NAME_MAX} characters`);
const variable = z
  .object({
    name: z.string().min(1, 'is required').max(100, 'must be at most 100 characters'),
    type: z.enum(['string', 'number', 'boolean', 'object', 'array']).default('string'),
    required: z.boolean().default(false),
  })
  .strict();
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
    template_data: z.record(z.string(), z.unknown(), { error: 'must be an object' }),
  })
  .strict();

/** The path's template id; a malformed one cannot exist, so it is simply not found. */
function templateIdOf(req: ApiRequest): string {
  const id = req.params.template_id;
  if (!TEMPLATE_ID.test(id)) throw notFound('Template', id);
  return id;
}

/** Under an Idempotency-Key the new template's id is chosen before the request runs. */
const newTemplateId = { newIds: (_: unknown, at: number) => [newId('tmpl', at)] };

export function templateCommandRoutes(api: ApiRouter, services: Services) {
  /** Answers with the template as the read model now shows it, after waiting for the projection. */
  const current = async (req: ApiRequest, templateId: string, position: string | undefined) => {
    await waitAfterCommit(services, TEMPLATE_PROJECTIONS, position, { id: templateId });
    const template = await getTemplate(services.db, req.auth, templateId);
    if (!template) throw notFound('Template', templateId);
    return template;
  };

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

  api.post(
    '/templates',
    async (req) => {
      const body = parse(createBody, req.body);
      const earlier = await createdEarlier(services, req, templateStream);
      if (earlier) return created(await current(req, earlier.id, earlier.position));
      const { templateId, position } = await createTemplate(
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
      return created(await current(req, templateId, position));
    },
    {
      schema: {
        tag: 'Templates',
        summary: 'Create a template',
        body: createBody,
        responses: { 201: Template },
        errors: ['plan_limit_exceeded', 'conflict'],
      },
      idempotent: newTemplateId,
    },
  );

  api.patch(
    '/templates/:template_id',
    async (req) => {
      const templateId = templateIdOf(req);
      const { name, ...changes } = parse(updateBody, req.body);
      const { position } = await updateTemplate(services, metaOf(req.auth), templateId, {
        name,
        changes: dropUndefined(changes),
      });
      return ok(await current(req, templateId, position));
    },
    {
      schema: {
        tag: 'Templates',
        summary: 'Change the draft of a template',
        body: updateBody,
        responses: { 200: Template },
        errors: ['conflict'],
      },
    },
  );

  api.post(
    '/templates/:template_id/publish',
    async (req) => {
      const templateId = templateIdOf(req);
      const { position } = await publishTemplate(services, metaOf(req.auth), templateId);
      return ok(await current(req, templateId, position));
    },
    {
      schema: {
        tag: 'Templates',
        summary: 'Publish the draft',
        responses: { 200: Template },
        errors: ['conflict'],
      },
    },
  );

  api.post(
    '/templates/:template_id/duplicate',
    async (req) => {
      const sourceId = templateIdOf(req);
      const body = parse(duplicateBody, req.body);
      const earlier = await createdEarlier(services, req, templateStream);
      if (earlier) return created(await current(req, earlier.id, earlier.position));
      const { templateId, position } = await duplicateTemplate(
        services,
        metaOf(req.auth),
        req.auth.plan,
        sourceId,
        body.name,
        req.idempotency?.ids[0],
      );
      return created(await current(req, templateId, position));
    },
    {
      schema: {
        tag: 'Templates',
        summary: 'Duplicate a template',
        body: duplicateBody,
        responses: { 201: Template },
        errors: ['plan_limit_exceeded', 'conflict'],
      },
      idempotent: newTemplateId,
    },
  );

  api.delete(
    '/templates/:template_id',
    async (req) => {
      const templateId = templateIdOf(req);
      const { position } = await deleteTemplate(services, metaOf(req.auth), templateId);
      await services.readYourWrites.waitFor(TEMPLATE_PROJECTIONS, position);
      return ok({ id: templateId, deleted: true });
    },
    {
      schema: {
        tag: 'Templates',
        summary: 'Delete a template',
        responses: { 200: Deleted },
        errors: ['conflict'],
      },
    },
  );
}

/** PATCH semantics: an absent field keeps its value, `null` (html, text) removes the part. */
function dropUndefined<T extends Record<string, unknown>>(o: T) {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}
