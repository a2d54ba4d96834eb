import { handleCommand, rebuildState } from '../../platform/eventstore/command.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import type { Plan } from '../../platform/http/auth-context.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { countActiveTemplates } from '../../read-side/templates/queries.ts';
import { requireTemplate, templateDecider } from './decider.ts';
import { type TemplateContent, templateStream } from './events.ts';

/**
 * Template commands: ids, time and the quota count come in here; the decider validates the Handlebars sources
 * itself (parsing is pure). The quota count is read from the read model, so two creates racing from separate
 * processes can both pass at the last free slot; one template over a Free quota is the accepted worst case.
 */
type Deps = Pick<Services, 'store' | 'clock' | 'db'>;

const newVersionId = (services: Pick<Services, 'clock'>) => newId('tmplv', services.clock.now().getTime());

export async function createTemplate(
  services: Deps,
  meta: EventMetadata,
  plan: Plan,
  input: { name: string; engine: string; content: TemplateContent },
) {
  const templateId = newId('tmpl', services.clock.now().getTime());
  const result = await handleCommand(
    services.store,
    templateStream(templateId),
    templateDecider,
    {
      type: 'CreateTemplate',
      templateId,
      versionId: newVersionId(services),
      orgId: meta.orgId,
      mode: meta.mode,
      plan,
      activeTemplates: await countActiveTemplates(services.db, meta.orgId, meta.mode),
      at: services.clock.now().toISOString(),
      ...input,
    },
    meta,
  );
  return { templateId, position: result.position };
}

export async function duplicateTemplate(
  services: Deps,
  meta: EventMetadata,
  plan: Plan,
  sourceId: string,
  name?: string,
) {
  const source = requireTemplate(
    rebuildState(templateDecider, await services.store.readStream(templateStream(sourceId))),
    {
      templateId: sourceId,
      orgId: meta.orgId,
      mode: meta.mode,
    },
  );
  const templateId = newId('tmpl', services.clock.now().getTime());
  const result = await handleCommand(
    services.store,
    templateStream(templateId),
    templateDecider,
    {
      type: 'DuplicateTemplate',
      templateId,
      versionId: newVersionId(services),
      orgId: meta.orgId,
      mode: meta.mode,
      plan,
      activeTemplates: await countActiveTemplates(services.db, meta.orgId, meta.mode),
      at: services.clock.now().toISOString(),
      name,
      source: { templateId: sourceId, name: source.name, version: source.latest },
    },
    meta,
  );
  return { templateId, position: result.position };
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
  return { position: result.position };
}

export async function publishTemplate(services: Deps, meta: EventMetadata, templateId: string) {
  const command = {
    type: 'PublishTemplate' as const,
    templateId,
    orgId: meta.orgId,
    mode: meta.mode,
    at: services.clock.now().toISOString(),
  };
  const result = await handleCommand(
    services.store,
    templateStream(templateId),
    templateDecider,
    command,
    meta,
  );
  return { position: result.position };
}

export async function deleteTemplate(services: Deps, meta: EventMetadata, templateId: string) {
  const command = {
    type: 'DeleteTemplate' as const,
    templateId,
    orgId: meta.orgId,
    mode: meta.mode,
    at: services.clock.now().toISOString(),
  };
  const result = await handleCommand(
    services.store,
    templateStream(templateId),
    templateDecider,
    command,
    meta,
  );
  return { position: result.position };
}
