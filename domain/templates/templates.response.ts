import { z } from 'zod';
import { listOf, timestamp } from '../../platform/http/route-schema.ts';

const variable = z.strictObject({
  name: z.string(),
  type: z.enum(['string', 'number', 'boolean', 'object', 'array']),
  required: z.boolean(),
  fallback: z.union([z.string(), z.number(), z.boolean()]).optional(),
});

const version = {
  id: z.string(),
  version: z.int(),
  subject: z.string(),
  html: z.string().nullable(),
  text: z.string().nullable(),
  variables: z.array(variable),
  created_at: timestamp,
  published_at: timestamp.nullable(),
};
const TemplateVersionContent = z.strictObject(version).meta({ id: 'TemplateVersionContent' });

export const Template = z
  .strictObject({
    object: z.literal('template'),
    id: z.string(),
    name: z.string(),
    engine: z.literal('handlebars'),
    status: z.enum(['draft', 'published']),
    draft: TemplateVersionContent.nullable(),
    published: TemplateVersionContent.nullable(),
    duplicated_from: z.string().nullable(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'Template' });

export const TemplateList = listOf(Template, 'TemplateList');

const TemplateVersion = z
  .strictObject({
    object: z.literal('template_version'),
    template_id: z.string(),
    status: z.enum(['published', 'draft', 'superseded']),
    ...version,
  })
  .meta({ id: 'TemplateVersion' });
export const TemplateVersionList = listOf(TemplateVersion, 'TemplateVersionList');

export const RenderedTemplate = z
  .strictObject({
    subject: z.string(),
    html: z.string().nullable(),
    text: z.string().nullable(),
    template_version_id: z.string(),
  })
  .meta({ id: 'RenderedTemplate' });
