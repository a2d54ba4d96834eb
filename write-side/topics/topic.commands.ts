import { handleCommand, type Without } from '../../platform/eventstore/command.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { type TopicCommand, topicDecider } from './topic.decider.ts';
import { type DefaultSubscription, topicStream } from './topic.events.ts';

type Deps = Pick<Services, 'store' | 'clock'>;

/** Runs a command on a topic of the caller's organization and mode. */
async function onTopic(
  services: Deps,
  meta: EventMetadata,
  topicId: string,
  command: Without<TopicCommand, 'topicId' | 'orgId' | 'mode' | 'at'>,
) {
  const result = await handleCommand(
    services.store,
    topicStream(topicId),
    topicDecider,
    {
      ...command,
      topicId,
      orgId: meta.orgId,
      mode: meta.mode,
      at: services.clock.now().toISOString(),
    } as TopicCommand,
    meta,
  );
  return { topicId, position: result.position };
}

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

export const deleteTopic = (services: Deps, meta: EventMetadata, topicId: string) =>
  onTopic(services, meta, topicId, { type: 'DeleteTopic' });
