import {
  CONTACT_IMPORT_EVENT_TYPES,
  type ContactImportEvent,
} from '../../domain/contact-imports/contact-import.events.ts';
import type { DueChange, Task } from '../../platform/due/due-queue.ts';
import type { DueTable } from '../../platform/due/due-sql.ts';
import { isOneOf, type StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { DueProcess } from '../due-process.ts';
import type { ContactImportCursor } from './contact-import-cursor.ts';
import { workContactImport } from './contact-import-run.ts';

type Job = { import_id: string };

/** How long a run works on one job before it lets it go (due again at once): well inside the lease. */
const SLICE_MS = 10_000;

export const CONTACT_IMPORT_JOBS: DueTable = {
  table: 'contact_import_jobs',
  key: { import_id: 'text' },
  dueAt: 'due_at',
  columns: [],
  // Renewed while a slice goes on (SLICE_MS): after a crash, another process resumes the job within half a minute.
  leaseMs: 30_000,
};

/**
 * Works contact imports: a job is queued from its ContactImportStarted and claimed from a DueQueue, so one
 * process at a time writes it (a crashed one's claim runs out and another resumes from the log). A run works a
 * job for at most SLICE_MS, then gives it back due at once; the file's reader stays here for the next slice.
 */
export class ContactImportProcess extends DueProcess<Job> {
  readonly #cursors = new Map<string, ContactImportCursor>();

  constructor(services: Services) {
    super(services, {
      name: 'contact-import',
      everyMs: 1000,
      table: CONTACT_IMPORT_JOBS,
      batch: 2,
      concurrency: 1,
    });
  }

  protected dueChange(e: StoredEvent): DueChange | undefined {
    if (!isOneOf<ContactImportEvent>(e, CONTACT_IMPORT_EVENT_TYPES) || e.type !== 'ContactImportStarted')
      return undefined;
    return { add: { import_id: e.data.importId, due_at: e.createdAt.toISOString() } };
  }

  /** Works every job due, slice after slice, until none is left or the process stops. */
  protected override async work(): Promise<number> {
    let done = 0;
    for (;;) {
      const worked = await super.work();
      done += worked;
      if (worked === 0 || this.stopping.aborted) return done;
    }
  }

  protected plan(rows: Job[]): Task[] {
    return rows.map((row) => () => this.#slice(row));
  }

  async #slice(row: Job): Promise<number> {
    const until = performance.now() + SLICE_MS;
    const state = await workContactImport(this.services, row.import_id, {
      cursors: this.#cursors,
      pause: () => performance.now() > until || this.stopping.aborted,
    });
    const finished = !state.exists || state.status === 'completed' || state.status === 'failed';
    this.due.finish(row, finished ? null : this.services.clock.now());
    return 1;
  }
}
