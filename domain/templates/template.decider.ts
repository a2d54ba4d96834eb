import { AppError, notFound } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import type { CommandCaller, Plan } from '../../platform/tenancy.ts';
import { cutText } from '../../platform/unstorable-text.ts';
import { PLANS } from '../organizations/plans.ts';
import { checkTemplateContent } from './content-rules.ts';
import type { TemplateContent, TemplateEvent, TemplateVersion } from './template.events.ts';

/** Templates per organization and mode; null is unlimited. */
export const TEMPLATE_NAME_MAX = 200;

type Caller = CommandCaller<'templateId'>;
/** The quota facts a new template needs (the plan slots held, from the caller: write-side/plan-slots). */
interface NewTemplate extends Caller {
  versionId: string;
  plan: Plan;
  activeTemplates: number;
}

export type TemplateCommand =
  | (NewTemplate & { type: 'CreateTemplate'; name: string; engine: string; content: TemplateContent })
  | (NewTemplate & {
      type: 'DuplicateTemplate';
      /** Defaults to `Copy of <source name>`. */
      name?: string;
      source: { templateId: string; name: string; version: TemplateVersion };
    })
  | (Caller & { type: 'UpdateTemplate'; versionId: string; name?: string; changes: Partial<TemplateContent> })
  | (Caller & { type: 'PublishTemplate' })
  | (Caller & { type: 'DeleteTemplate' });

export interface ActiveTemplate {
  status: 'active';
  orgId: string;
  mode: Mode;
  name: string;
  /** The newest version: the draft when `latest.number` is above `publishedNumber`. */
  latest: TemplateVersion;
  publishedNumber: number | null;
}

export type TemplateState =
  | { status: 'none' }
  | ActiveTemplate
  | (Omit<ActiveTemplate, 'status'> & { status: 'deleted' });

/** Another organization's template, the other mode's, or a deleted one: all "not found". */
export function requireTemplate(
  state: TemplateState,
  caller: Pick<Caller, 'templateId' | 'orgId' | 'mode'>,
): ActiveTemplate {
  if (state.status !== 'active' || state.orgId !== caller.orgId || state.mode !== caller.mode) {
    throw notFound('Template', caller.templateId);
  }
  return state;
}

const contentOf = (v: TemplateContent): TemplateContent => ({
  subject: v.subject,
  html: v.html,
  text: v.text,
  variables: v.variables,
});

function checkQuota(command: NewTemplate) {
  const quota = PLANS[command.plan].templates;
  if (quota !== null && command.activeTemplates >= quota) {
    throw new AppError(
      'plan_limit_exceeded',
      `The ${command.plan} plan allows ${quota} templates; delete one or upgrade the plan.`,
    );
  }
}

/** A new template: its first version, written or copied from another template's. */
function creationEvents(
  command: Extract<TemplateCommand, { type: 'CreateTemplate' | 'DuplicateTemplate' }>,
  state: TemplateState,
): TemplateEvent[] {
  switch (command.type) {
    case 'CreateTemplate': {
      if (state.status !== 'none')
        throw new AppError('conflict', `Template ${command.templateId} already exists`);
      if (command.engine !== 'handlebars')
        throw new AppError('validation_error', '`engine`: only `handlebars` is supported');
      checkQuota(command);
      checkTemplateContent(command.content);
      const version = {
        ...contentOf(command.content),
        versionId: command.versionId,
        number: 1,
        createdAt: command.at,
      };
      const { templateId, orgId, mode, name, at } = command;
      return [
        {
          type: 'TemplateCreated',
          data: { templateId, orgId, mode, name, engine: 'handlebars', version, createdAt: at },
        },
      ];
    }
    case 'DuplicateTemplate': {
      if (state.status !== 'none')
        throw new AppError('conflict', `Template ${command.templateId} already exists`);
      checkQuota(command);
      const { templateId, orgId, mode, at, source } = command;
      // Cut, never between the halves of a surrogate pair: a lone half cannot be stored.
      const name = command.name ?? cutText(`Copy of ${source.name}`, TEMPLATE_NAME_MAX);
      const version = {
        ...contentOf(source.version),
        versionId: command.versionId,
        number: 1,
        createdAt: at,
      };
      return [
        {
          type: 'TemplateDuplicated',
          data: {
            templateId,
            orgId,
            mode,
            name,
            engine: 'handlebars',
            version,
            createdAt: at,
            sourceTemplateId: source.templateId,
            sourceVersionId: source.version.versionId,
          },
        },
      ];
    }
  }
}

export const templateDecider: Decider<TemplateCommand, TemplateEvent, TemplateState> = {
  initialState: { status: 'none' },
  evolve(state, event) {
    switch (event.type) {
      case 'TemplateCreated':
      case 'TemplateDuplicated': {
        const d = event.data;
        return {
          status: 'active',
          orgId: d.orgId,
          mode: d.mode,
          name: d.name,
          latest: d.version,
          publishedNumber: null,
        };
      }
    }
    if (state.status === 'none') return state;
    switch (event.type) {
      case 'TemplateRenamed':
        return { ...state, name: event.data.name };
      case 'TemplateDraftUpdated':
        return { ...state, latest: event.data.version };
      case 'TemplatePublished':
        return { ...state, publishedNumber: event.data.number };
      case 'TemplateDeleted':
        return { ...state, status: 'deleted' };
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'CreateTemplate':
      case 'DuplicateTemplate':
        return creationEvents(command, state);
      case 'UpdateTemplate': {
        const template = requireTemplate(state, command);
        const events: TemplateEvent[] = [];
        if (command.name !== undefined && command.name !== template.name) {
          events.push({
            type: 'TemplateRenamed',
            data: { templateId: command.templateId, name: command.name, renamedAt: command.at },
          });
        }
        const current = contentOf(template.latest);
        const next = contentOf({ ...current, ...command.changes });
        // Saving the same content again makes no new version, so a retried PATCH is harmless.
        if (JSON.stringify(next) !== JSON.stringify(current)) {
          checkTemplateContent(next);
          const version = {
            ...next,
            versionId: command.versionId,
            number: template.latest.number + 1,
            createdAt: command.at,
          };
          events.push({ type: 'TemplateDraftUpdated', data: { templateId: command.templateId, version } });
        }
        return events;
      }
      case 'PublishTemplate': {
        const template = requireTemplate(state, command);
        // Nothing newer than the published version: publishing again changes nothing (safe to retry).
        if (template.publishedNumber === template.latest.number) return [];
        const { versionId, number } = template.latest;
        return [
          {
            type: 'TemplatePublished',
            data: { templateId: command.templateId, versionId, number, publishedAt: command.at },
          },
        ];
      }
      case 'DeleteTemplate': {
        requireTemplate(state, command);
        return [{ type: 'TemplateDeleted', data: { templateId: command.templateId, deletedAt: command.at } }];
      }
    }
  },
};
