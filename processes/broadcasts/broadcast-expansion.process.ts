import type { BroadcastEvent } from '../../domain/broadcasts/broadcast.events.ts';
import type { DueChange, Task } from '../../platform/due/due-queue.ts';
import type { DueTable } from '../../platform/due/due-sql.ts';
import { isOneOf, type StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { DueProcess } from '../due-process.ts';
import { expandBroadcast } from './broadcast-step.ts';

type Due = { broadcast_id: string };

/** How long one claim of a broadcast goes on taking steps (wall time, far below the lease). */
const STEPS_PER_CLAIM_MS = 5_000;

export const BROADCAST_EXPANSIONS: DueTable = {
  table: 'broadcast_expansions',
  key: { broadcast_id: 'text' },
  dueAt: 'due_at',
  columns: [],
  // Renewed while a claim takes steps: after a crash, another process resumes the broadcast within half a minute.
  leaseMs: 30_000,
};

const TYPES: BroadcastEvent['type'][] = [
  'BroadcastScheduled',
  'BroadcastSendingStarted',
  'BroadcastUnscheduled',
  'BroadcastCanceled',
  'BroadcastSent',
];

/**
 * Broadcast expansion: a broadcast sent (or scheduled, from its time) is turned into emails one step at a time
 * (broadcast-step.ts), each step a claim of its row in the due list: the row is due
 * again at once after a step, so other broadcasts and every request get their turn between steps, and a crash
 * leaves the row to come back when its lease runs out, resuming at the broadcast's recorded cursor. A broadcast
 * that starts sending while claimed stays claimed: one process at a time expands it.
 */
export class BroadcastExpansionProcess extends DueProcess<Due> {
  constructor(services: Services) {
    super(services, {
      name: 'broadcast-expansion',
      everyMs: 1000,
      table: BROADCAST_EXPANSIONS,
      batch: 2,
      concurrency: 1,
    });
  }

  protected dueChange(e: StoredEvent): DueChange | undefined {
    if (!isOneOf<BroadcastEvent>(e, TYPES)) return undefined;
    switch (e.type) {
      case 'BroadcastScheduled':
        return { set: { broadcast_id: e.data.broadcastId, due_at: e.data.sendAt } };
      case 'BroadcastSendingStarted':
        return { set: { broadcast_id: e.data.broadcastId, due_at: e.data.startedAt } };
      // Stopped while sending: one more step withdraws its emails nobody received (broadcast-withdrawal.ts).
      case 'BroadcastCanceled':
        return { set: { broadcast_id: e.data.broadcastId, due_at: e.data.canceledAt } };
      case 'BroadcastUnscheduled':
      case 'BroadcastSent':
        return { remove: { broadcast_id: e.data.broadcastId } };
    }
    return undefined;
  }

  /**
   * Expands what is due now: a claimed broadcast gets pages for up to STEPS_PER_CLAIM_MS, then its row is due again
   * at once, behind the others due; each task resolves with how many emails it queued.
   */
  protected plan(rows: Due[]): Task[] {
    return rows.map((row) => async () => {
      const until = Date.now() + STEPS_PER_CLAIM_MS;
      const more = () => Date.now() < until && !this.stopping.aborted;
      const step = await expandBroadcast(this.services, row.broadcast_id, more);
      this.due.finish(row, step.next);
      return step.queued;
    });
  }
}
