import { describe, expect, it } from 'vitest';
import { type TemplateCommand, templateDecider } from '../../domain/templates/template.decider.ts';
import type {
  TemplateContent,
  TemplateEvent,
  TemplateVersion,
} from '../../domain/templates/template.events.ts';
import { itHidesFromOtherCallers, spec } from '../support/given-when-then.ts';

const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-02T00:00:00.000Z';
const T2 = '2026-01-03T00:00:00.000Z';
const caller = { templateId: 'tmpl_1', orgId: 'org_1', mode: 'live' as const };
const content: TemplateContent = {
  subject: 'Hello {{name}}',
  html: '<p>Hi {{name}}</p>',
  text: 'Hi {{name}}',
  variables: [{ name: 'name', type: 'string', required: true }],
};
const v = (number: number, versionId: string, at: string, c: TemplateContent = content): TemplateVersion => ({
  ...c,
  versionId,
  number,
  createdAt: at,
});

const create: TemplateCommand = {
  type: 'CreateTemplate',
  ...caller,
  versionId: 'tmplv_1',
  plan: 'free',
  activeTemplates: 0,
  name: 'Welcome',
  engine: 'handlebars',
  content,
  at: T0,
};
const created: TemplateEvent = {
  type: 'TemplateCreated',
  data: { ...caller, name: 'Welcome', engine: 'handlebars', version: v(1, 'tmplv_1', T0), createdAt: T0 },
};
const newSubject = { ...content, subject: 'Welcome, {{name}}' };
const update = (
  versionId: string,
  at: string,
  changes: Partial<TemplateContent> = { subject: newSubject.subject },
) => ({ type: 'UpdateTemplate', ...caller, versionId, changes, at }) as const;
const publish = (at: string) => ({ type: 'PublishTemplate', ...caller, at }) as const;
const published = (versionId: string, number: number, at: string): TemplateEvent => ({
  type: 'TemplatePublished',
  data: { templateId: 'tmpl_1', versionId, number, publishedAt: at },
});
const draftUpdated = (versionId: string, number: number, at: string, c = newSubject): TemplateEvent => ({
  type: 'TemplateDraftUpdated',
  data: { templateId: 'tmpl_1', version: v(number, versionId, at, c) },
});

describe('template decider: the version state machine', () => {
  it('creates a template as draft version 1', () =>
    spec(templateDecider).given([]).when(create).then([created]));

  it('publishes the draft', () =>
    spec(templateDecider)
      .given([created])
      .when(publish(T1))
      .then([published('tmplv_1', 1, T1)]));

  it('updating a published template makes a new draft and leaves the published version active', () => {
    spec(templateDecider)
      .given([created, published('tmplv_1', 1, T1)])
      .when(update('tmplv_2', T2))
      .then([draftUpdated('tmplv_2', 2, T2)]);
    const state = [created, published('tmplv_1', 1, T1), draftUpdated('tmplv_2', 2, T2)].reduce(
      templateDecider.evolve,
      templateDecider.initialState,
    );
    expect(state).toMatchObject({ publishedNumber: 1, latest: { number: 2 } });
  });

  it('publishes again: the new draft becomes the published version', () =>
    spec(templateDecider)
      .given([created, published('tmplv_1', 1, T1), draftUpdated('tmplv_2', 2, T2)])
      .when(publish(T2))
      .then([published('tmplv_2', 2, T2)]));

  it('publishing with no newer draft changes nothing', () =>
    spec(templateDecider)
      .given([created, published('tmplv_1', 1, T1)])
      .when(publish(T2))
      .then([]));

  it('saving identical content makes no new version', () =>
    spec(templateDecider)
      .given([created])
      .when(update('tmplv_2', T1, { subject: content.subject }))
      .then([]));

  it('renames without a new version', () =>
    spec(templateDecider)
      .given([created])
      .when({ ...update('tmplv_2', T1, {}), name: 'Renamed' })
      .then([{ type: 'TemplateRenamed', data: { templateId: 'tmpl_1', name: 'Renamed', renamedAt: T1 } }]));

  it('an update builds on the latest version: unchanged fields carry over, null removes a part', () =>
    spec(templateDecider)
      .given([created])
      .when(update('tmplv_2', T1, { text: null }))
      .then([draftUpdated('tmplv_2', 2, T1, { ...content, text: null })]));

  it('deletes, after which the template is not found', () => {
    const deleted: TemplateEvent = { type: 'TemplateDeleted', data: { templateId: 'tmpl_1', deletedAt: T1 } };
    spec(templateDecider)
      .given([created])
      .when({ type: 'DeleteTemplate', ...caller, at: T1 })
      .then([deleted]);
    spec(templateDecider).given([created, deleted]).when(publish(T2)).thenFails('not_found');
    spec(templateDecider).given([created, deleted]).when(update('tmplv_2', T2)).thenFails('not_found');
  });

  itHidesFromOtherCallers(templateDecider, [created], publish(T1));
  it('publishes nothing that was never created', () =>
    spec(templateDecider).given([]).when(publish(T1)).thenFails('not_found'));

  it('refuses creating the same template twice', () =>
    spec(templateDecider).given([created]).when(create).thenFails('conflict'));
});

describe('template decider: rules', () => {
  it('allows a Free plan 5 templates', () => {
    spec(templateDecider)
      .given([])
      .when({ ...create, activeTemplates: 4 })
      .then([created]);
    spec(templateDecider)
      .given([])
      .when({ ...create, activeTemplates: 5 })
      .thenFails('plan_limit_exceeded', /5 templates/);
  });
  it('does not limit Pro and Business', () => {
    for (const plan of ['pro', 'business'] as const) {
      spec(templateDecider)
        .given([])
        .when({ ...create, plan, activeTemplates: 500 })
        .then([created]);
    }
  });
  it.each<{ rule: string; history: TemplateEvent[]; command: TemplateCommand; message: RegExp }>([
    {
      rule: 'refuses an unknown engine',
      history: [],
      command: { ...create, engine: 'mustache' },
      message: /engine/,
    },
    {
      rule: 'refuses a variable used but not declared, saying where',
      history: [],
      command: { ...create, content: { ...content, html: '<p>\n  {{name}} {{order_id}}</p>' } },
      message: /`html`: variable `order_id` at line 2, column 14 is not declared/,
    },
    {
      rule: 'refuses a variable declared twice',
      history: [],
      command: {
        ...create,
        content: {
          ...content,
          variables: [...content.variables, { name: 'name', type: 'string', required: false }],
        },
      },
      message: /variables\[1\]\.name.*declared twice/,
    },
    {
      rule: 'refuses a fallback of another type than its variable’s',
      history: [],
      command: {
        ...create,
        content: {
          ...content,
          variables: [{ name: 'name', type: 'number', required: false, fallback: 'x' }],
        },
      },
      message: /`variables\[0\]\.fallback`: must be a number, as the variable is/,
    },
    {
      rule: 'refuses a fallback on a required variable',
      history: [],
      command: {
        ...create,
        content: { ...content, variables: [{ name: 'name', type: 'string', required: true, fallback: 'x' }] },
      },
      message: /`variables\[0\]\.fallback`: a required variable has no fallback/,
    },
    {
      rule: 'refuses a syntax error with line and column',
      history: [],
      command: { ...create, content: { ...content, text: 'Hi\n{{#if name}}x{{/each}}' } },
      message: /`text`: Handlebars syntax error at line 2, column \d+/,
    },
    {
      rule: 'validates the content of an update too',
      history: [created],
      command: update('tmplv_2', T1, { subject: 'Hi {{nobody}}' }),
      message: /nobody/,
    },
  ])('$rule', ({ history, command, message }) =>
    spec(templateDecider).given(history).when(command).thenFails('validation_error', message),
  );
});

describe('template decider: duplicate', () => {
  const duplicate = (
    name?: string,
    quota: { plan: 'free' | 'pro'; activeTemplates: number } = { plan: 'pro', activeTemplates: 1 },
  ): TemplateCommand => ({
    type: 'DuplicateTemplate',
    templateId: 'tmpl_2',
    orgId: 'org_1',
    mode: 'live',
    versionId: 'tmplv_9',
    ...quota,
    name,
    source: { templateId: 'tmpl_1', name: 'Welcome', version: v(3, 'tmplv_3', T1) },
    at: T2,
  });
  const duplicated = (name: string): TemplateEvent => ({
    type: 'TemplateDuplicated',
    data: {
      templateId: 'tmpl_2',
      orgId: 'org_1',
      mode: 'live',
      name,
      engine: 'handlebars',
      version: v(1, 'tmplv_9', T2),
      createdAt: T2,
      sourceTemplateId: 'tmpl_1',
      sourceVersionId: 'tmplv_3',
    },
  });
  it('copies the latest version as draft 1, named "Copy of <name>" by default', () =>
    spec(templateDecider)
      .given([])
      .when(duplicate())
      .then([duplicated('Copy of Welcome')]));
  it('takes a given name', () =>
    spec(templateDecider)
      .given([])
      .when(duplicate('Onboarding'))
      .then([duplicated('Onboarding')]));
  it('counts against the quota', () =>
    spec(templateDecider)
      .given([])
      .when(duplicate(undefined, { plan: 'free', activeTemplates: 5 }))
      .thenFails('plan_limit_exceeded'));
});
