import { EMAIL_EVENT_TYPES, type EmailEvent } from '../../domain/emails/email.events.ts';
import type { DueChange, Task } from '../../platform/due/due-queue.ts';
import type { DueTable } from '../../platform/due/due-sql.ts';
import { isOneOf, type StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { releaseEmail, systemMeta } from '../../write-side/emails/email.commands.ts';
import { DueProcess } from '../due-process.ts';

type Due = { email_id: string; org_id: string; mode: 'live' | 'test' };

export const SCHEDULED_EMAILS: DueTable = {
  table: 'scheduled_emails',
  key: { email_id: 'text' },
  dueAt: 'send_at',
  columns: ['org_id', 'mode'],
  leaseMs: 30_000,
};

/**
 * Scheduler: keeps a due list of scheduled emails from the log and releases each one when its time comes
 * (EmailReleased, after which delivery or the simulator takes it like a queued email). Rows are claimed from a
 * DueQueue, so several processes share the list; a release that races a cancel or a reschedule is settled by the
 * email stream's expected revision and the decider (release only if still scheduled and due), so nothing is sent
 * twice or after a cancel. A released row is done (nothing can schedule that email again); a row whose email was
 * not released (rescheduled, canceled, released elsewhere) is given back and the log consumer moves or removes it.
 */
export class SchedulerProcess extends DueProcess<Due> {
  constructor(services: Services) {
    super(services, {
      name: 'scheduler',
      everyMs: 1000,
      table: SCHEDULED_EMAILS,
      batch: 100,
      concurrency: 10,
    });
  }

  protected dueChange(e: StoredEvent): DueChange | undefined {
    if (!isOneOf<EmailEvent>(e, EMAIL_EVENT_TYPES)) return undefined;
    switch (e.type) {
      case 'EmailScheduled':
      case 'EmailRescheduled': {
        const { orgId, mode } = e.metadata;
        const row = { email_id: e.data.emailId, org_id: orgId, mode, send_at: e.data.sendAt };
        return { set: row, unclaim: true };
      }
      case 'EmailCanceled':
      case 'EmailReleased':
        return { remove: { email_id: e.data.emailId } };
    }
    return undefined;
  }

  /** Releases what is due now; each task resolves with how many emails it released. */
  protected plan(rows: Due[]): Task[] {
    return rows.map((row) => () => this.#release(row));
  }

  async #release(row: Due): Promise<number> {
    const meta = systemMeta({ orgId: row.org_id, mode: row.mode });
    try {
      const released = (await releaseEmail(this.services, meta, row.email_id)).events.length;
      if (released > 0) this.due.finish(row, null);
      return released;
    } catch (err) {
      // Its row is given back and a later run tries again.
      this.services.log.error({ err, emailId: row.email_id }, 'releasing a scheduled email failed');
      return 0;
    }
  }
}
