import type { Transaction } from '../../platform/db/database.ts';
import type { Migration } from '../../platform/db/migrations.ts';
import type { StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { releaseEmail, systemMeta } from '../../write-side/emails/commands.ts';
import type { EmailEvent } from '../../write-side/emails/events.ts';
import { DueWork, eachEvent, LogConsumer } from '../log-consumer.ts';
import type { BackgroundProcess } from '../process.ts';

export const schedulerMigrations: Migration[] = [
  {
    id: 'scheduler-001',
    sql: `CREATE TABLE IF NOT EXISTS scheduled_emails (
  email_id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  send_at timestamptz NOT NULL,
  claimed_until timestamptz
);
CREATE INDEX IF NOT EXISTS scheduled_emails_due ON scheduled_emails (send_at)`,
  },
];

/** A claim that is not finished within this time (crashed process) is taken over by another one. */
const CLAIM_MS = 60_000;
const BATCH = 100;

async function track(tx: Transaction, event: StoredEvent) {
  const e = event as unknown as EmailEvent;
  switch (e.type) {
    case 'EmailScheduled':
    case 'EmailRescheduled':
      await tx.query(
        `INSERT INTO scheduled_emails (email_id, org_id, mode, send_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (email_id) DO UPDATE SET send_at = excluded.send_at, claimed_until = NULL`,
        [e.data.emailId, event.metadata.orgId, event.metadata.mode, e.data.sendAt],
      );
      return;
    case 'EmailCanceled':
    case 'EmailReleased':
      await tx.query('DELETE FROM scheduled_emails WHERE email_id = $1', [e.data.emailId]);
      return;
  }
}

/**
 * Scheduler: keeps a due list of scheduled emails from the log and releases each one when its time comes
 * (EmailReleased, after which delivery or the simulator takes it like a queued email). Rows are claimed with
 * FOR UPDATE SKIP LOCKED and a lease, so several processes share the list; a release that races a cancel or
 * a reschedule is settled by the email stream's expected revision and the decider (release only if still
 * scheduled and due), so nothing is sent twice or after a cancel.
 */
export class SchedulerProcess implements BackgroundProcess {
  readonly name = 'scheduler';
  readonly #services: Services;
  readonly #consumer: LogConsumer;
  readonly #due: DueWork;

  constructor(services: Services) {
    this.#services = services;
    this.#consumer = new LogConsumer({ name: 'scheduler', ...services }, eachEvent(track));
    this.#due = new DueWork({
      consumer: this.#consumer,
      work: () => this.#releaseAll(),
      intervalMs: 1000,
      log: services.log,
    });
  }

  start(): void {
    this.#due.start();
  }

  /** Catches up with the log, then releases what is due now. Returns how many emails were released. */
  runOnce(): Promise<number> {
    return this.#due.runOnce();
  }

  stop(): Promise<void> {
    return this.#due.stop();
  }

  async #releaseAll(): Promise<number> {
    let released = 0;
    while (true) {
      const due = await this.#claim();
      if (due.length === 0) return released;
      for (const row of due) {
        try {
          const r = await releaseEmail(
            this.#services,
            systemMeta({ orgId: row.org_id, mode: row.mode }),
            row.email_id,
          );
          released += r.events.length;
        } catch (err) {
          this.#services.log.error({ err, emailId: row.email_id }, 'releasing a scheduled email failed');
        }
      }
      // The consumer removes released rows when it sees EmailReleased; until then the lease keeps them claimed.
      await this.#consumer.catchUp();
    }
  }

  async #claim() {
    const now = this.#services.clock.now();
    const { rows } = await this.#services.db.query<{
      email_id: string;
      org_id: string;
      mode: 'live' | 'test';
    }>(
      `UPDATE scheduled_emails SET claimed_until = $2
       WHERE email_id IN (
         SELECT email_id FROM scheduled_emails
         WHERE send_at <= $1 AND (claimed_until IS NULL OR claimed_until < $1)
         ORDER BY send_at LIMIT $3 FOR UPDATE SKIP LOCKED)
       RETURNING email_id, org_id, mode`,
      [now, new Date(now.getTime() + CLAIM_MS), BATCH],
    );
    return rows;
  }
}
