import { handleCommand, type Without } from '../../platform/eventstore/command.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { type AudienceCommand, audienceDecider } from './audience.decider.ts';
import { audienceStream } from './audience.events.ts';

type Deps = Pick<Services, 'store' | 'clock'>;

/** Runs a command on an audience of the caller's organization and mode. */
async function onAudience(
  services: Deps,
  meta: EventMetadata,
  audienceId: string,
  command: Without<AudienceCommand, 'audienceId' | 'orgId' | 'mode' | 'at'>,
) {
  const result = await handleCommand(
    services.store,
    audienceStream(audienceId),
    audienceDecider,
    {
      ...command,
      audienceId,
      orgId: meta.orgId,
      mode: meta.mode,
      at: services.clock.now().toISOString(),
    } as AudienceCommand,
    meta,
  );
  return { audienceId, position: result.position };
}

export const createAudience = (services: Deps, meta: EventMetadata, name: string) =>
  onAudience(services, meta, newId('aud', services.clock.now().getTime()), { type: 'CreateAudience', name });

export const renameAudience = (services: Deps, meta: EventMetadata, audienceId: string, name: string) =>
  onAudience(services, meta, audienceId, { type: 'RenameAudience', name });

export const deleteAudience = (services: Deps, meta: EventMetadata, audienceId: string) =>
  onAudience(services, meta, audienceId, { type: 'DeleteAudience' });
