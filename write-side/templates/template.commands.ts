import { PLANS } from '../../domain/organizations/plans.ts';
import {
  requireTemplate,
  type TemplateCommand,
  templateDecider,
} from '../../domain/templates/template.decider.ts';
import { type TemplateContent, templateStream } from '../../domain/templates/template.events.ts';
import { handleCommand, rebuildState, type Without } from '../../platform/eventstore/command.ts';
import type { EventMetadata, Position } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import type { Plan } from '../../platform/tenancy.ts';
import { refuseWhileBroadcastUses } from '../broadcasts/broadcast-checks.ts';
import { freeSlot, type PlanSlotKind, withPlanSlot } from '../plan-slots/plan-slot.commands.ts';

/**
 * Template commands: ids, time and the quota come in here; the decider validates the Handlebars sources itself
 * (parsing is pure). The quota is a plan slot taken before the template is written (write-side/plan-slots), so
 * two creates racing for the last one cannot both pass; the decider's own check then sees the slots held.
 */
type Deps = Pick<Services, 'store' | 'clock' | 'db' | 'lookUps'>;

/** Active templates count against the plan; a deleted one frees its slot. */
export const TEMPLATE_SLOTS: PlanSlotKind = {
  resource: 'templates',
  streamOf: templateStream,
  releasedBy: ['TemplateDeleted'],
};

/** Same words as the decider's own check. */
const templateSlot = (plan: Plan, id: string) => {
  const limit = PLANS[plan].templates;
  return {
    id,
    limit,
    refusal: `The ${plan} plan allows ${limit} templates; delete one or upgrade the plan.`,
  };
};

const newVersionId = (services: Pick<Services, 'clock'>) => newId('tmplv', services.clock.now().getTime());

/**
 * Where the answer must wait for: what the command wrote, or, when it changed nothing (a retried publish, an
 * identical save), the template's last event, so the answer never shows the template from before a write that
 * made the change (its own answer timed out, or a concurrent request made it).
 */
async function positionAfter(services: Deps, templateId: string, result: { position?: Position }) {
  if (result.position !== undefined) return { position: result.position };
  const history = await services.store.readStream(templateStream(templateId));
  return { position: history.at(-1)?.position };
}

/**
 * A new template under a plan slot: `command` is the creation's own part (fields, or the source to copy); the
 * ids, owner, plan and time are filled in here.
 */
async function newTemplate(
  services: Deps,
  meta: EventMetadata,
  plan: Plan,
  chosenId: string | undefined,
  command: Without<
    Extract<TemplateCommand, { type: 'CreateTemplate' | 'DuplicateTemplate' }>,
    'templateId' | 'versionId' | 'orgId' | 'mode' | 'plan' | 'activeTemplates' | 'at'
  >,
) {
  const templateId = chosenId ?? newId('tmpl', services.clock.now().getTime());
  return withPlanSlot(services, meta, TEMPLATE_SLOTS, templateSlot(plan, templateId), async (held) => {
    const result = await handleCommand(
      services.store,
      templateStream(templateId),
      templateDecider,
      {
        ...command,
        templateId,
        versionId: newVersionId(services),
        orgId: meta.orgId,
        mode: meta.mode,
        plan,
        activeTemplates: held,
        at: services.clock.now().toISOString(),
      } as TemplateCommand,
      meta,
    );
    return { templateId, position: result.position };
  });
}

export const createTemplate = (
  services: Deps,
  meta: EventMetadata,
  plan: Plan,
  input: { name: string; engine: string; content: TemplateContent },
  /** Chosen in advance under an Idempotency-Key; a new id by default. */
  chosenId?: string,
) => newTemplate(services, meta, plan, chosenId, { type: 'CreateTemplate', ...input });

export async function duplicateTemplate(
  services: Deps,
  meta: EventMetadata,
  plan: Plan,
  sourceId: string,
  name?: string,
  /** Chosen in advance under an Idempotency-Key; a new id by default. */
  chosenId?: string,
) {
  const source = requireTemplate(
    rebuildState(templateDecider, await services.store.readStream(templateStream(sourceId))),
    { templateId: sourceId, orgId: meta.orgId, mode: meta.mode },
  );
  return newTemplate(services, meta, plan, chosenId, {
    type: 'DuplicateTemplate',
    name,
    source: { templateId: sourceId, name: source.name, version: source.latest },
  });
}

export async function updateTemplate(
  services: Deps,
  meta: EventMetadata,
  templateId: string,
  input: { name?: string; changes: Partial<TemplateContent> },
) {
  const result = await handleCommand(
    services.store,
    templateStream(templateId),
    templateDecider,
    {
      type: 'UpdateTemplate',
      templateId,
      versionId: newVersionId(services),
      orgId: meta.orgId,
      mode: meta.mode,
      at: services.clock.now().toISOString(),
      ...input,
    },
    meta,
  );
  return positionAfter(services, templateId, result);
}

/** Publish or delete: commands that carry only the template and the caller. */
async function onTemplate(
  services: Deps,
  meta: EventMetadata,
  type: 'PublishTemplate' | 'DeleteTemplate',
  templateId: string,
) {
  const at = services.clock.now().toISOString();
  const command = { type, templateId, orgId: meta.orgId, mode: meta.mode, at };
  return handleCommand(services.store, templateStream(templateId), templateDecider, command, meta);
}

export async function publishTemplate(services: Deps, meta: EventMetadata, templateId: string) {
  const result = await onTemplate(services, meta, 'PublishTemplate', templateId);
  return positionAfter(services, templateId, result);
}

/** Refused while a scheduled or sending broadcast renders it (`refuseWhileBroadcastUses`). */
export async function deleteTemplate(services: Deps, meta: EventMetadata, templateId: string) {
  await refuseWhileBroadcastUses(services, { orgId: meta.orgId, mode: meta.mode }, 'template', templateId);
  const result = await onTemplate(services, meta, 'DeleteTemplate', templateId);
  await freeSlot(services, meta, TEMPLATE_SLOTS, templateId);
  return { position: result.position };
}
