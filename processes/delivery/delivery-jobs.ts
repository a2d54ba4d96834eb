import type { Clock } from '../../platform/clock.ts';
import type { Database, Transaction } from '../../platform/db/database.ts';
import type { Migration } from '../../platform/db/migrations.ts';
import type { StoredEvent } from '../../platform/eventstore/types.ts';
import type { Logger } from '../../platform/logger.ts';
import type { EmailEvent } from '../../write-side/emails/events.ts';

export const deliveryMigrations: Migration[] = [
  {
    id: 'delivery-001',
    sql: `CREATE TABLE IF NOT EXISTS delivery_jobs (
  email_id text PRIMARY KEY,
  org_id text NOT NULL,
  mode text NOT NULL,
  due_at timestamptz NOT NULL,
  claimed_until timestamptz
);
CREATE INDEX IF NOT EXISTS delivery_jobs_due ON delivery_jobs (due_at)`,
  },
];

export type Job = { email_id: string; org_id: string; mode: 'live' };

/**
 * Live emails accepted (queued, or released by the scheduler) become jobs due at once, all of a batch of the log
 * in one statement. Returns the events that made jobs.
 */
export async function enqueueDeliveries(tx: Transaction, events: StoredEvent[]): Promise<StoredEvent[]> {
  const jobs = events.flatMap((event) => {
    if (event.metadata.mode !== 'live') return [];
    const e = event as unknown as EmailEvent;
    const dueAt =
      e.type === 'EmailQueued' ? e.data.createdAt : e.type === 'EmailReleased' ? e.data.releasedAt : null;
    return dueAt
      ? [{ event, row: { email_id: e.data.emailId, org_id: event.metadata.orgId, due_at: dueAt } }]
      : [];
  });
  if (jobs.length === 0) return [];
  await tx.query(
    `INSERT INTO delivery_jobs (email_id, org_id, mode, due_at)
     SELECT email_id, org_id, 'live', due_at FROM json_to_recordset($1::json) AS x(email_id text, org_id text, due_at timestamptz)
     ON CONFLICT DO NOTHING`,
    [JSON.stringify(jobs.map((j) => j.row))],
  );
  return jobs.map((j) => j.event);
}

/** Longer than the slowest send (several 30 s time-outs): only a crashed worker's claim runs out. */
const CLAIM_MS = 10 * 60_000;
/** Finished jobs written per statement. */
const FINISH_BATCH = 50;

/**
 * Claims due jobs in batches, FOR UPDATE SKIP LOCKED with a lease, so several processes share the work; and
 * writes what became of them (removed, or due again later) in batches too. That is safe because a job only says
 * "look at this email": one whose removal a crash loses is looked at again once its lease runs out, and the
 * stream then says there is nothing to send.
 */
export class DeliveryJobs {
  readonly #db: Database;
  readonly #clock: Clock;
  readonly #log: Logger;
  #finished: { email_id: string; due_at: string | null }[] = [];
  readonly #writing = new Set<Promise<void>>();

  constructor(o: { db: Database; clock: Clock; log: Logger }) {
    this.#db = o.db;
    this.#clock = o.clock;
    this.#log = o.log;
  }

  async claim(limit: number): Promise<Job[]> {
    const now = this.#clock.now();
    const { rows } = await this.#db.query<Job>(
      `UPDATE delivery_jobs SET claimed_until = $2
       WHERE email_id IN (
         SELECT email_id FROM delivery_jobs
         WHERE due_at <= $1 AND (claimed_until IS NULL OR claimed_until < $1)
         ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED)
       RETURNING email_id, org_id, mode`,
      [now, new Date(now.getTime() + CLAIM_MS), limit],
    );
    return rows;
  }

  /** The job is done (`dueAt` null) or due again at `dueAt`; written with the next batch. */
  finish(emailId: string, dueAt: string | null): void {
    this.#finished.push({ email_id: emailId, due_at: dueAt });
    if (this.#finished.length >= FINISH_BATCH) this.#write();
  }

  /** Writes every finish so far. */
  async flush(): Promise<void> {
    this.#write();
    await Promise.all(this.#writing);
  }

  #write(): void {
    const batch = this.#finished;
    if (batch.length === 0) return;
    this.#finished = [];
    const done = JSON.stringify(batch.filter((j) => j.due_at === null).map((j) => j.email_id));
    const later = JSON.stringify(batch.filter((j) => j.due_at !== null));
    const writing = Promise.all([
      done !== '[]' &&
        this.#db.query(
          'DELETE FROM delivery_jobs WHERE email_id IN (SELECT jsonb_array_elements_text($1::jsonb))',
          [done],
        ),
      later !== '[]' &&
        this.#db.query(
          `UPDATE delivery_jobs j SET due_at = x.due_at, claimed_until = NULL
           FROM jsonb_to_recordset($1::jsonb) AS x(email_id text, due_at timestamptz)
           WHERE j.email_id = x.email_id`,
          [later],
        ),
    ])
      // Lost writes only make the jobs come back when their lease runs out (see above).
      .catch((err) => this.#log.error({ err }, 'could not write finished delivery jobs'))
      .then(() => {
        this.#writing.delete(writing);
      });
    this.#writing.add(writing);
  }
}
