import { audienceDecider } from '../../domain/audiences/audience.decider.ts';
import { audienceStream } from '../../domain/audiences/audience.events.ts';
import { tenantCommands } from '../../platform/eventstore/command.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { refuseWhileBroadcastUses } from '../broadcasts/broadcast-checks.ts';

type Deps = Pick<Services, 'store' | 'clock' | 'db' | 'lookUps'>;

const runAudience = tenantCommands(audienceStream, audienceDecider, 'audienceId');

const onAudience = async (...args: Parameters<typeof runAudience>) => ({
  audienceId: args[2],
  position: (await runAudience(...args)).position,
});

export const createAudience = (services: Deps, meta: EventMetadata, name: string) =>
  onAudience(services, meta, newId('aud', services.clock.now().getTime()), { type: 'CreateAudience', name });

export const renameAudience = (services: Deps, meta: EventMetadata, audienceId: string, name: string) =>
  onAudience(services, meta, audienceId, { type: 'RenameAudience', name });

/** Refused while a scheduled or sending broadcast names it (`refuseWhileBroadcastUses`). */
export async function deleteAudience(services: Deps, meta: EventMetadata, audienceId: string) {
  await refuseWhileBroadcastUses(services, { orgId: meta.orgId, mode: meta.mode }, 'audience', audienceId);
  return onAudience(services, meta, audienceId, { type: 'DeleteAudience' });
}
