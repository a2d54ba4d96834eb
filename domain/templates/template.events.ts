import type { Mode } from '../../platform/eventstore/types.ts';

export type VariableType = 'string' | 'number' | 'boolean' | 'object' | 'array';

export interface TemplateVariable {
  name: string;
  type: VariableType;
  required: boolean;
  /** What a send that does not give the variable (or gives null) renders with; a plain value of its type. */
  fallback?: string | number | boolean;
}

/** What a version holds: the three Handlebars sources and the declared variables. */
export interface TemplateContent {
  subject: string;
  html: string | null;
  text: string | null;
  variables: TemplateVariable[];
}

/** One immutable version. `number` counts from 1 per template; `versionId` is what a sent email records. */
export interface TemplateVersion extends TemplateContent {
  versionId: string;
  number: number;
  createdAt: string;
}

interface TemplateBirth {
  templateId: string;
  orgId: string;
  mode: Mode;
  name: string;
  engine: 'handlebars';
  version: TemplateVersion;
  createdAt: string;
}

export type TemplateEvent =
  | { type: 'TemplateCreated'; data: TemplateBirth }
  /** Born as a copy: the same shape as TemplateCreated plus where it came from. */
  | {
      type: 'TemplateDuplicated';
      data: TemplateBirth & { sourceTemplateId: string; sourceVersionId: string };
    }
  | { type: 'TemplateRenamed'; data: { templateId: string; name: string; renamedAt: string } }
  | { type: 'TemplateDraftUpdated'; data: { templateId: string; version: TemplateVersion } }
  | {
      type: 'TemplatePublished';
      data: { templateId: string; versionId: string; number: number; publishedAt: string };
    }
  | { type: 'TemplateDeleted'; data: { templateId: string; deletedAt: string } };

export const templateStream = (templateId: string) => `template-${templateId}`;
