import { QUEUE_EVENT_TYPES, type QueueEvent } from '../../domain/queue/queue.events.ts';
import type { Transaction } from '../../platform/db/database.ts';
import { isOneOf, type StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { ProcessManager } from '../process.ts';

/**
 * What an operator's retry or give-up does to the mail waiting for a destination: its jobs in `delivery_jobs`
 * that no worker holds now (unclaimed, or their claim ran out) become due at the request's time, marked
 * `expedite` (delayed recipients are due too) or `give_up` (the delivery process bounces them softly). Only
 * jobs queued by the request's time: mail that came later was not what the operator saw, and a replay of the log
 * changes nothing it did not change the first time. Pauses are a read model (projections/delivery-pauses).
 */
export async function applyQueueControls(tx: Transaction, events: StoredEvent[]): Promise<void> {
  for (const e of events) {
    if (!isQueueControl(e)) continue;
    const flag = e.type === 'DeliveryRetryRequested' ? 'expedite' : 'give_up';
    await tx.query(
      `UPDATE delivery_jobs SET due_at = $1, ${flag} = true, claimed_until = NULL
       WHERE destination = $2 AND ($3::text IS NULL OR org_id = $3) AND mode = 'live' AND queued_at <= $1
         AND (claimed_until IS NULL OR claimed_until <= $1)`,
      [e.data.at, e.data.destination, e.data.orgId],
    );
  }
}

/** An operator's retry or give-up request: the only events `applyQueueControls` acts on. */
const isQueueControl = (
  e: StoredEvent,
): e is StoredEvent & Extract<QueueEvent, { type: 'DeliveryRetryRequested' | 'DeliveryGiveUpRequested' }> =>
  isOneOf<QueueEvent>(e, QUEUE_EVENT_TYPES) &&
  (e.type === 'DeliveryRetryRequested' || e.type === 'DeliveryGiveUpRequested');

/**
 * Follows the log for the queue's retry and give-up requests; it has no timed work of its own. Batches without
 * such a request cost it no transaction (log-consumer.ts): under load every batch of the log would.
 */
export class QueueControlsProcess extends ProcessManager {
  constructor(services: Services) {
    super(services, { name: 'queue-controls', everyMs: 60_000 });
  }

  protected override acts(event: StoredEvent): boolean {
    return isQueueControl(event);
  }

  protected override consume(tx: Transaction, events: StoredEvent[]): Promise<void> {
    return applyQueueControls(tx, events);
  }

  protected async work(): Promise<number> {
    return 0;
  }
}
