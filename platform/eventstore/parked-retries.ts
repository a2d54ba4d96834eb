import { systemClock } from '../clock.ts';
import { type Database, literal, type Transaction } from '../db/database.ts';
import { DueQueue } from '../due/due-queue.ts';
import type { DueTable } from '../due/due-sql.ts';
import type { Logger } from '../logger.ts';
import { attempt, describe, type Handle, retryDelaySeconds } from './parked-events.ts';
import type { StoredEvent } from './types.ts';

/** Parked streams a retry claims at most. */
const STREAMS_PER_RETRY = 20;

/**
 * The parked streams of one consumer as a due table: one row per stream (parked-events.ts writes it with the
 * stream's events), due at its next retry. A retry writes its outcome in the transaction that applies the
 * events (`claim_token` names the claim), so a stream's events and its due row never disagree.
 */
export const parkedStreams = (consumer: string): DueTable => ({
  table: 'parked_streams',
  key: { consumer: 'text', stream: 'text' },
  dueAt: 'due_at',
  columns: [],
  where: `$row.consumer = ${literal(consumer)}`,
  token: 'claim_token',
  leaseMs: 30_000,
});

type ParkedStream = { consumer: string; stream: string; claim_token: string };

const revive = (json: string | StoredEvent): StoredEvent => {
  const e = typeof json === 'string' ? JSON.parse(json) : json;
  return { ...e, createdAt: new Date(e.createdAt) };
};

/**
 * Retries a consumer's parked streams that are due, claimed from the due queue: each stream's events in order, in
 * a savepoint of the transaction `lock` opened (which must serialise with the consumer's batches, so no batch
 * parks an event of the stream meanwhile). Applied, the events and the stream's row leave the tables; a failure
 * counts an attempt and makes the stream due again after the back-off (`retryDelaySeconds`). A stream whose
 * consumer another process holds (`lock` answers false) is given back at once, for that process.
 */
export class ParkedRetries {
  readonly #db: Database;
  readonly #consumer: string;
  readonly #handle: Handle;
  readonly #lock: (tx: Transaction) => Promise<boolean>;
  readonly #log: Logger;
  readonly #due: DueQueue<ParkedStream>;

  constructor(o: {
    db: Database;
    consumer: string;
    handle: Handle;
    lock: (tx: Transaction) => Promise<boolean>;
    log: Logger;
  }) {
    this.#db = o.db;
    this.#consumer = o.consumer;
    this.#handle = o.handle;
    this.#lock = o.lock;
    this.#log = o.log;
    this.#due = new DueQueue({ db: o.db, clock: systemClock, log: o.log }, parkedStreams(o.consumer));
  }

  /** Retries the streams due now (up to STREAMS_PER_RETRY); returns how many events were applied. */
  async retry(): Promise<number> {
    const claimed = await this.#due.claim(STREAMS_PER_RETRY);
    let applied = 0;
    for (const [i, row] of claimed.entries()) {
      let outcome: number | undefined;
      try {
        outcome = await this.#retryStream(row);
      } catch (error) {
        // The database's trouble, not the events': the stream is due again after a short back-off.
        await this.#due.giveBack([row]);
        await this.#due.giveBack(claimed.slice(i + 1), { now: true });
        throw error;
      }
      if (outcome === undefined) {
        await this.#due.giveBack(claimed.slice(i), { now: true });
        break;
      }
      applied += outcome;
      // Claimed again here while its retry went on (its lease had run out): free for the next retry.
      const again = this.#due.settled(row);
      if (again) await this.#due.giveBack([again], { now: true });
    }
    return applied;
  }

  /** Retries one stream; resolves with the events applied, or undefined when another process holds the consumer. */
  #retryStream({ stream, claim_token: token }: ParkedStream): Promise<number | undefined> {
    const consumer = this.#consumer;
    return this.#db.transaction(async (tx) => {
      if (!(await this.#lock(tx))) return undefined;
      const { rows } = await tx.query<{ event: string | StoredEvent; attempts: number }>(
        `SELECT event, attempts FROM parked_events WHERE consumer = $1 AND stream = $2 ORDER BY position FOR UPDATE`,
        [consumer, stream],
      );
      const events = rows.map((r) => revive(r.event));
      // A stream whose events an operator removed has nothing left to apply: its row goes too.
      const error = events.length > 0 ? await attempt(tx, this.#handle, events) : undefined;
      if (error === undefined) {
        await tx.query('DELETE FROM parked_events WHERE consumer = $1 AND stream = $2', [consumer, stream]);
        await tx.query(
          'DELETE FROM parked_streams WHERE consumer = $1 AND stream = $2 AND claim_token = $3',
          [consumer, stream, token],
        );
        if (events.length > 0)
          this.#log.info({ consumer, stream, events: events.length }, 'parked events applied on retry');
        return events.length;
      }
      const attempts = Math.max(...rows.map((r) => r.attempts)) + 1;
      const wait = retryDelaySeconds(attempts);
      await tx.query(
        `UPDATE parked_events SET attempts = $3, next_attempt_at = now() + make_interval(secs => $4),
           error = CASE WHEN position = $5 THEN $6 ELSE error END
         WHERE consumer = $1 AND stream = $2`,
        [consumer, stream, attempts, wait, events[0].position, describe(error)],
      );
      await tx.query(
        `UPDATE parked_streams SET due_at = now() + make_interval(secs => $4), claimed_until = NULL, claim_token = NULL
         WHERE consumer = $1 AND stream = $2 AND claim_token = $3`,
        [consumer, stream, token, wait],
      );
      this.#log.error(
        { consumer, stream, position: events[0].position, attempts, error: describe(error) },
        'parked event failed again; retried with back-off',
      );
      return 0;
    });
  }
}
