import type { Transaction } from '../../platform/db/database.ts';
import type { Migration } from '../../platform/db/migrations.ts';
import { isOneOf, type StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import type { BroadcastEvent } from '../../write-side/broadcasts/broadcast.events.ts';
import { expandNextBatch } from '../../write-side/broadcasts/broadcast-expansion.commands.ts';
import { DueQueue, type DueTable } from '../due-queue.ts';
import { ProcessManager } from '../process.ts';

export const broadcastExpansionMigrations: Migration[] = [
  {
    id: 'broadcast-expansion-001',
    sql: `CREATE TABLE IF NOT EXISTS broadcast_expansions (
  broadcast_id text PRIMARY KEY,
  due_at timestamptz NOT NULL,
  claimed_until timestamptz
);
CREATE INDEX IF NOT EXISTS broadcast_expansions_due ON broadcast_expansions (due_at)`,
  },
];

type Due = { broadcast_id: string };

/** How long one claim of a broadcast goes on taking steps (wall time, far below the lease). */
const STEPS_PER_CLAIM_MS = 5_000;

export const BROADCAST_EXPANSIONS: DueTable = {
  table: 'broadcast_expansions',
  key: { broadcast_id: 'text' },
  dueAt: 'due_at',
  columns: [],
  // Several claims' worth of steps (STEPS_PER_CLAIM_MS and the step under way): only a crashed process's runs out,
  // and then another resumes the broadcast within half a minute.
  leaseMs: 30_000,
};

const TYPES: BroadcastEvent['type'][] = [
  'BroadcastScheduled',
  'BroadcastSendingStarted',
  'BroadcastCanceled',
  'BroadcastSent',
];

/**
 * Broadcast expansion: a broadcast sent (or scheduled, from its time) is turned into emails one step at a time
 * (write-side/broadcasts/broadcast-expansion.ts), each step a claim of its row in the due list: the row is due
 * again at once after a step, so other broadcasts and every request get their turn between steps, and a crash
 * leaves the row to come back when its lease runs out, resuming at the broadcast's recorded cursor.
 */
export class BroadcastExpansionProcess extends ProcessManager {
  readonly #services: Services;
  readonly #due: DueQueue<Due>;

  constructor(services: Services) {
    super(services, { name: 'broadcast-expansion', everyMs: 1000 });
    this.#services = services;
    this.#due = new DueQueue(services, BROADCAST_EXPANSIONS);
  }

  protected override async consume(tx: Transaction, events: StoredEvent[]): Promise<void> {
    for (const e of events) {
      if (!isOneOf<BroadcastEvent>(e, TYPES)) continue;
      switch (e.type) {
        case 'BroadcastScheduled':
        case 'BroadcastSendingStarted':
          await tx.query(
            `INSERT INTO broadcast_expansions (broadcast_id, due_at) VALUES ($1, $2)
             ON CONFLICT (broadcast_id) DO UPDATE SET due_at = excluded.due_at`,
            [e.data.broadcastId, e.type === 'BroadcastScheduled' ? e.data.sendAt : e.data.startedAt],
          );
          break;
        case 'BroadcastCanceled':
        case 'BroadcastSent':
          await tx.query('DELETE FROM broadcast_expansions WHERE broadcast_id = $1', [e.data.broadcastId]);
          break;
      }
    }
  }

  /**
   * Expands what is due now: a claimed broadcast gets steps for up to STEPS_PER_CLAIM, then its row is due again at
   * once, behind the others due; resolves with how many emails it queued.
   */
  protected work(): Promise<number> {
    return this.#due.drain({ batch: 2, concurrency: 1, signal: this.stopping }, (rows) =>
      rows.map((row) => async () => {
        let queued = 0;
        const until = Date.now() + STEPS_PER_CLAIM_MS;
        for (;;) {
          const step = await expandNextBatch(this.#services, row.broadcast_id);
          queued += step.queued;
          const again = step.next && step.next.getTime() <= this.#services.clock.now().getTime();
          if (!again || Date.now() >= until || this.stopping.aborted) {
            this.#due.finish(row, step.next);
            return queued;
          }
        }
      }),
    );
  }
}
