import { type EmailEvent, emailStream } from '../../domain/emails/email.events.ts';
import type { Queryable, Transaction } from '../../platform/db/database.ts';
import type { EventStore, Stored, StoredEvent } from '../../platform/eventstore/types.ts';
import { type EmailSummary, isEmailSourced, isFirstEmailEvent, summaryOf } from './public-events.v1.ts';

/** Stream reads at once when summaries are read from the emails' streams. */
const STREAM_READS = 20;

/**
 * How long an email's summary is kept after it was recorded. Most of an email's events come within minutes
 * (sent, delivered, bounced); a later one (a complaint, a click weeks on) has its summary read from the email's
 * stream again.
 */
export const SUMMARY_KEEP_DAYS = 7;

const INSERT_SQL = `
INSERT INTO webhook_email_summaries (email_id, summary, recorded_at)
SELECT email_id, summary::jsonb, $2 FROM json_to_recordset($1::json) AS (email_id text, summary text)
ON CONFLICT (email_id) DO NOTHING`;

/** Rows deleted by one statement of a purge: it goes on until fewer are left. */
const PURGE_BATCH = 5000;

/**
 * Deletes the summaries recorded before `before` (SUMMARY_KEEP_DAYS ago: email-summaries-purge.process.ts), a batch a
 * statement, until fewer are left or `signal` aborts; resolves with how many.
 */
export async function purgeEmailSummaries(q: Queryable, before: Date, signal?: AbortSignal): Promise<number> {
  let purged = 0;
  for (;;) {
    const { rowCount } = await q.query(
      `DELETE FROM webhook_email_summaries WHERE ctid = ANY (ARRAY(
         SELECT ctid FROM webhook_email_summaries WHERE recorded_at < $1 LIMIT ${PURGE_BATCH}))`,
      [before],
    );
    purged += rowCount ?? 0;
    if ((rowCount ?? 0) < PURGE_BATCH || signal?.aborted) return purged;
  }
}

/**
 * from/to/subject/tags of emails (webhook_email_summaries), which every later event of an email needs for its
 * payload. An email's first event carries them and never changes: the fan-out records them as it meets first
 * events, in its transaction (`record`). An email whose row is not there (its first event came before the
 * table, before its organization had an endpoint, or more than SUMMARY_KEEP_DAYS ago) has its stream read
 * (`of`): the fan-out does so before its transaction opens, as stream reads inside it would keep its locks that
 * much longer, and again inside only for a row purged in between.
 */
export class EmailSummaries {
  readonly #store: EventStore;
  readonly #now: () => Date;

  constructor(store: EventStore, now: () => Date) {
    this.#store = store;
    this.#now = now;
  }

  /** Records the summaries that first events among `events` carry. */
  async record(tx: Transaction, events: StoredEvent[]): Promise<void> {
    const summaries = new Map<string, EmailSummary | null>();
    for (const e of events) if (isFirstEmailEvent(e)) summaries.set(e.data.emailId, summaryOf([e]));
    await this.#insert(tx, summaries);
  }

  /**
   * The summaries of the emails these events are of, by email id: from first events among them, the table, or
   * for the emails of `wanted` events that the table lacks, their streams (recorded for next time).
   */
  async of(
    q: Queryable,
    events: StoredEvent[],
    wanted: (e: StoredEvent) => boolean = () => true,
  ): Promise<Map<string, EmailSummary | null>> {
    const found = new Map<string, EmailSummary | null>();
    for (const e of events) if (isFirstEmailEvent(e)) found.set(e.data.emailId, summaryOf([e]));
    const sourced = events.filter(isEmailSourced);
    const ids = [...new Set(sourced.map((e) => e.data.emailId))].filter((id) => !found.has(id));
    if (ids.length === 0) return found;
    const { rows } = await q.query<{ email_id: string; summary: EmailSummary }>(
      'SELECT email_id, summary FROM webhook_email_summaries WHERE email_id = ANY($1)',
      [ids],
    );
    for (const r of rows) found.set(r.email_id, r.summary);
    const missing = sourced.filter((e) => !found.has(e.data.emailId) && wanted(e));
    for (const [id, summary] of await this.#read(q, missing)) found.set(id, summary);
    return found;
  }

  /** The summaries of these events' emails, from their streams, recorded. */
  async #read(q: Queryable, events: Stored<EmailEvent>[]): Promise<Map<string, EmailSummary | null>> {
    const ids = [...new Set(events.map((e) => e.data.emailId))];
    const all = new Map<string, EmailSummary | null>();
    for (let i = 0; i < ids.length; i += STREAM_READS) {
      const read = new Map(
        await Promise.all(
          ids
            .slice(i, i + STREAM_READS)
            .map(async (id) => [id, summaryOf(await this.#store.readStream(emailStream(id)))] as const),
        ),
      );
      await this.#insert(q, read);
      for (const [id, summary] of read) all.set(id, summary);
    }
    return all;
  }

  async #insert(q: Queryable, summaries: Map<string, EmailSummary | null>): Promise<void> {
    // Each summary as JSON text (docs/architecture.md, "JSON rows into PostgreSQL").
    const rows = [...summaries].flatMap(([email_id, summary]) =>
      summary ? [{ email_id, summary: JSON.stringify(summary) }] : [],
    );
    if (rows.length > 0) await q.query(INSERT_SQL, [JSON.stringify(rows), this.#now()]);
  }
}
