import { type EmailEvent, emailStream } from '../../domain/emails/email.events.ts';
import type { Queryable, Transaction } from '../../platform/db/database.ts';
import type { EventStore, Stored, StoredEvent } from '../../platform/eventstore/types.ts';
import { type EmailSummary, isEmailSourced, isFirstEmailEvent, summaryOf } from './public-events.v1.ts';

/** Stream reads at once when summaries are filled in from the emails' streams. */
const STREAM_READS = 20;

const INSERT_SQL = `
INSERT INTO webhook_email_summaries (email_id, summary)
SELECT email_id, summary FROM json_to_recordset($1::json) AS (email_id text, summary jsonb)
ON CONFLICT (email_id) DO NOTHING`;

async function insert(q: Queryable, summaries: Map<string, EmailSummary | null>): Promise<void> {
  const rows = [...summaries].flatMap(([email_id, summary]) => (summary ? [{ email_id, summary }] : []));
  if (rows.length > 0) await q.query(INSERT_SQL, [JSON.stringify(rows)]);
}

/**
 * from/to/subject/tags of emails (webhook_email_summaries), which every later event of an email needs for its
 * payload. An email's first event carries them and never changes: the fan-out records them as it meets first
 * events, in its transaction (`record`). An email whose first event came before the table was there has its
 * stream read (`fillIn`), before a transaction opens: stream reads inside it would keep its locks that much
 * longer.
 */
export class EmailSummaries {
  readonly #store: EventStore;

  constructor(store: EventStore) {
    this.#store = store;
  }

  /** Records the summaries that first events among `events` carry. */
  async record(tx: Transaction, events: StoredEvent[]): Promise<void> {
    const summaries = new Map<string, EmailSummary | null>();
    for (const e of events) if (isFirstEmailEvent(e)) summaries.set(e.data.emailId, summaryOf([e]));
    await insert(tx, summaries);
  }

  /** The summaries of the emails these events are of, by email id: from first events among them, or the table. */
  async of(q: Queryable, events: StoredEvent[]): Promise<Map<string, EmailSummary | null>> {
    const found = new Map<string, EmailSummary | null>();
    for (const e of events) if (isFirstEmailEvent(e)) found.set(e.data.emailId, summaryOf([e]));
    const ids = [...new Set(events.filter(isEmailSourced).map((e) => e.data.emailId))].filter(
      (id) => !found.has(id),
    );
    if (ids.length === 0) return found;
    const { rows } = await q.query<{ email_id: string; summary: EmailSummary }>(
      'SELECT email_id, summary FROM webhook_email_summaries WHERE email_id = ANY($1)',
      [ids],
    );
    for (const r of rows) found.set(r.email_id, r.summary);
    return found;
  }

  /**
   * Fills in, from their streams, the summaries of the emails of these events that the table lacks and whose
   * first event is not among them; `wanted` narrows them (to the emails that can lead to deliveries).
   */
  async fillIn(
    q: Queryable,
    events: StoredEvent[],
    wanted: (events: StoredEvent[]) => Promise<(e: StoredEvent) => boolean> = async () => () => true,
  ): Promise<void> {
    const known = await this.of(q, events);
    const missing = events.filter(isEmailSourced).filter((e) => !known.has(e.data.emailId));
    if (missing.length === 0) return;
    await this.#load(q, missing.filter(await wanted(missing)) as Stored<EmailEvent>[]);
  }

  async #load(q: Queryable, events: Stored<EmailEvent>[]): Promise<void> {
    const ids = [...new Set(events.map((e) => e.data.emailId))];
    for (let i = 0; i < ids.length; i += STREAM_READS) {
      const read = await Promise.all(
        ids
          .slice(i, i + STREAM_READS)
          .map(async (id) => [id, summaryOf(await this.#store.readStream(emailStream(id)))] as const),
      );
      await insert(q, new Map(read));
    }
  }
}
