import { type QueueCommand, queueDecider, queueDestination } from '../../domain/queue/queue.decider.ts';
import { queueStream, scopeOf } from '../../domain/queue/queue.events.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import type { Position } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';

/** Which destination, for which organization (null: every one), and who asks (the event's actor). */
export interface QueueTarget {
  destination: string;
  orgId: string | null;
  actor: string;
}

export interface QueueControlResult {
  /** The destination as recorded (normalized). */
  destination: string;
  /** False when nothing was appended (a resume with no pause in force). */
  changed: boolean;
  position?: Position;
}

type Control =
  | { type: 'PauseDelivery'; until: string; reason: string | null }
  | { type: 'ResumeDelivery' }
  | { type: 'RetryDelivery' }
  | { type: 'GiveUpDelivery' };

async function control(
  services: Pick<Services, 'store' | 'clock'>,
  target: QueueTarget,
  command: Control,
): Promise<QueueControlResult> {
  const destination = queueDestination(target.destination);
  const at = services.clock.now().toISOString();
  const result = await handleCommand(
    services.store,
    queueStream(target.orgId, destination),
    queueDecider,
    { ...command, destination, orgId: target.orgId, at } as QueueCommand,
    // Installation-wide controls belong to no organization: '' as in delivery_pauses.
    { orgId: scopeOf(target.orgId), mode: 'live', actor: target.actor },
  );
  return { destination, changed: result.events.length > 0, position: result.position };
}

/** Holds delivery to the destination until `until` (ISO time); mail waits, nothing is lost. */
export const pauseDelivery = (
  services: Pick<Services, 'store' | 'clock'>,
  target: QueueTarget,
  o: { until: string; reason?: string | null },
) => control(services, target, { type: 'PauseDelivery', until: o.until, reason: o.reason ?? null });

/** Ends the destination's pause in this scope before its time. */
export const resumeDelivery = (services: Pick<Services, 'store' | 'clock'>, target: QueueTarget) =>
  control(services, target, { type: 'ResumeDelivery' });

/** Makes the destination's deferred mail due now. */
export const retryDelivery = (services: Pick<Services, 'store' | 'clock'>, target: QueueTarget) =>
  control(services, target, { type: 'RetryDelivery' });

/** Gives up the destination's queued mail: each of its recipients bounces softly. */
export const giveUpDelivery = (services: Pick<Services, 'store' | 'clock'>, target: QueueTarget) =>
  control(services, target, { type: 'GiveUpDelivery' });
