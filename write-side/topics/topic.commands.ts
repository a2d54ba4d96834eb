import { topicDecider } from '../../domain/topics/topic.decider.ts';
import { type DefaultSubscription, topicStream } from '../../domain/topics/topic.events.ts';
import { tenantCommands } from '../../platform/eventstore/command.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { refuseWhileBroadcastUses } from '../broadcasts/broadcast-checks.ts';

type Deps = Pick<Services, 'store' | 'clock' | 'db' | 'lookUps'>;

const runTopic = tenantCommands(topicStream, topicDecider, 'topicId');
const onTopic = async (...args: Parameters<typeof runTopic>) => ({
  topicId: args[2],
  position: (await runTopic(...args)).position,
});

export const createTopic = (
  services: Deps,
  meta: EventMetadata,
  input: { name: string; description: string | null; defaultSubscription: DefaultSubscription },
) => onTopic(services, meta, newId('top', services.clock.now().getTime()), { type: 'CreateTopic', ...input });

export const updateTopic = (
  services: Deps,
  meta: EventMetadata,
  topicId: string,
  input: { name?: string; description?: string | null },
) => onTopic(services, meta, topicId, { type: 'UpdateTopic', ...input });

/** Refused while a scheduled or sending broadcast names it (`refuseWhileBroadcastUses`). */
export async function deleteTopic(services: Deps, meta: EventMetadata, topicId: string) {
  await refuseWhileBroadcastUses(services, { orgId: meta.orgId, mode: meta.mode }, 'topic', topicId);
  return onTopic(services, meta, topicId, { type: 'DeleteTopic' });
}
