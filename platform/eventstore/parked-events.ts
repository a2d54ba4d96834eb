import type { Queryable, Transaction } from '../db/database.ts';
import type { Migration } from '../db/migrations.ts';
import { isDatabaseUnavailable } from '../db/unavailable.ts';
import type { Logger } from '../logger.ts';
import type { Position, StoredEvent } from './types.ts';

/**
 * Events a consumer of the log (projection or process manager) could not apply. Every appended event must be
 * appliable, but a consumer's bug or an input rule that let something through must not hold back the log for
 * everyone: the failing event is parked here and the consumer moves on. Later events of the same stream wait
 * behind it (parked too, in order), so one stream's state never skips a step; other streams, and so other
 * organizations, go on. Parked events are retried with back-off until they apply, and are reported meanwhile
 * (`/readyz` is not ready, `postline projections status` lists them).
 */
export const parkedEventsMigrations: Migration[] = [
  {
    id: 'parked-events-001',
    sql: `
CREATE TABLE parked_events (
  consumer text NOT NULL,
  position text NOT NULL,
  stream text NOT NULL,
  type text NOT NULL,
  event json NOT NULL,
  error text NOT NULL,
  attempts int NOT NULL DEFAULT 1,
  parked_at timestamptz NOT NULL DEFAULT now(),
  next_attempt_at timestamptz NOT NULL,
  PRIMARY KEY (consumer, position)
);
CREATE INDEX parked_events_due ON parked_events (next_attempt_at)`,
  },
  {
    // Each parked stream is a row of the one due queue (parked-retries.ts), due at the earliest next attempt of
    // its events.
    id: 'parked-events-002',
    sql: `
CREATE TABLE parked_streams (
  consumer text NOT NULL,
  stream text NOT NULL,
  due_at timestamptz NOT NULL,
  claimed_until timestamptz,
  claim_token text,
  PRIMARY KEY (consumer, stream)
);
CREATE INDEX parked_streams_due ON parked_streams (consumer, due_at);
INSERT INTO parked_streams (consumer, stream, due_at)
  SELECT consumer, stream, min(next_attempt_at) FROM parked_events GROUP BY consumer, stream;
DROP INDEX parked_events_due`,
  },
];

/** How often a consumer looks for parked events that are due for a retry. */
export const PARKED_RETRY_MS = 5000;

/** The back-off of a parked stream's retries: 5 s, 10 s, 20 s … at most an hour. */
export const retryDelaySeconds = (attempts: number): number => Math.min(3600, 5 * 2 ** (attempts - 1));

/**
 * Failures that say nothing about the event: the database unavailable (`isDatabaseUnavailable`: a lost
 * connection, one that cannot be made), the connection or the server (08, 57), a conflict with another
 * transaction (40), resources (53), a lock not available (55P03). The batch is retried whole, nothing is parked.
 */
export function isTransient(error: unknown): boolean {
  if (isDatabaseUnavailable(error)) return true;
  const code = (error as { code?: unknown })?.code;
  if (typeof code !== 'string') return /connection|terminat|timeout/i.test(String((error as Error)?.message));
  return /^(08|40|53|57)/.test(code) || code === '55P03' || /^E[A-Z]+$/.test(code);
}

/** What is kept of an error: its SQLSTATE or class and first line, never the data that a detail may quote. */
export function describe(error: unknown): string {
  const e = error as { code?: string; name?: string; message?: string };
  // PostgreSQL quotes offending values in some messages ("invalid input syntax …: "…""): they stay out.
  const first = String(e?.message ?? error)
    .split('\n')[0]
    .replace(/"[^"]*"/g, '"…"')
    .slice(0, 200);
  return e?.code ? `${e.code}: ${first}` : `${e?.name ?? 'Error'}: ${first}`;
}

export interface ParkedEvent {
  consumer: string;
  position: Position;
  stream: string;
  type: string;
  error: string;
  attempts: number;
  parkedAt: string;
  nextAttemptAt: string;
}

export type Handle = (tx: Transaction, events: StoredEvent[]) => Promise<void>;

/**
 * Runs `handle` on `events` in a savepoint, their `atCommit` statements in it too (so that their failure shows
 * here), and answers the error when it rolled back.
 */
export async function attempt(tx: Transaction, handle: Handle, events: StoredEvent[]): Promise<unknown> {
  await tx.query('SAVEPOINT consume');
  const deferred: string[] = [];
  try {
    await handle(
      { query: (sql, params) => tx.query(sql, params), atCommit: (sql) => deferred.push(sql) },
      events,
    );
    for (const sql of deferred) await tx.query(sql);
    await tx.query('RELEASE SAVEPOINT consume');
    return undefined;
  } catch (error) {
    // Fails too when the connection is gone: then the whole batch fails, and nothing is parked.
    await tx.query('ROLLBACK TO SAVEPOINT consume');
    if (isTransient(error)) throw error;
    return error ?? new Error('undefined thrown');
  }
}

const row = (consumer: string, event: StoredEvent, error: string) => ({
  consumer,
  position: event.position,
  stream: event.streamId,
  type: event.type,
  event: JSON.stringify(event),
  error,
});

/**
 * Applies `events` one by one, each in a savepoint: one that fails, and every later one of its stream (or of a
 * stream in `parkedStreams`), is parked instead. Used after a batch failed as a whole.
 */
export async function applyEachOrPark(
  tx: Transaction,
  consumer: string,
  events: StoredEvent[],
  handle: Handle,
  parkedStreams: Set<string>,
  log: Logger,
): Promise<void> {
  const parked: ReturnType<typeof row>[] = [];
  for (const event of events) {
    if (parkedStreams.has(event.streamId)) {
      parked.push(row(consumer, event, 'waiting behind an earlier parked event of its stream'));
      continue;
    }
    const error = await attempt(tx, handle, [event]);
    if (error === undefined) continue;
    parkedStreams.add(event.streamId);
    parked.push(row(consumer, event, describe(error)));
    log.error(
      {
        consumer,
        position: event.position,
        stream: event.streamId,
        type: event.type,
        error: describe(error),
      },
      'event parked: the consumer failed on it and goes on without it; retried with back-off',
    );
  }
  await park(tx, parked);
}

/** Parks events of streams that already have parked ones, in order behind them. */
export function parkBehind(tx: Transaction, consumer: string, events: StoredEvent[]): Promise<void> {
  return park(
    tx,
    events.map((e) => row(consumer, e, 'waiting behind an earlier parked event of its stream')),
  );
}

/**
 * Parks events, and makes their streams due rows (parked-retries.ts): a stream is due at the earliest next attempt
 * of its events, so an event parked behind a stream that waits longer makes it due at the event's first retry.
 */
async function park(tx: Transaction, rows: ReturnType<typeof row>[]): Promise<void> {
  if (rows.length === 0) return;
  await tx.query(
    `WITH parked AS (
       INSERT INTO parked_events (consumer, position, stream, type, event, error, next_attempt_at)
       SELECT r.consumer, r.position, r.stream, r.type, r.event::json, r.error, now() + make_interval(secs => $2)
       FROM json_to_recordset($1::json) AS r(consumer text, position text, stream text, type text, event text, error text)
       ON CONFLICT (consumer, position) DO NOTHING
       RETURNING consumer, stream, next_attempt_at)
     INSERT INTO parked_streams AS s (consumer, stream, due_at)
     SELECT consumer, stream, min(next_attempt_at) FROM parked GROUP BY consumer, stream
     ON CONFLICT (consumer, stream) DO UPDATE SET due_at = least(s.due_at, excluded.due_at)`,
    [JSON.stringify(rows), retryDelaySeconds(1)],
  );
}

/**
 * The streams of a consumer that have parked events (a SQL expression): read in a statement that starts once the
 * consumer's locks are held, so that it sees every stream parked by the transaction it waited for.
 */
export const parkedStreamsSql = (consumerLiteral: string) =>
  `(SELECT coalesce(array_agg(DISTINCT stream), '{}') FROM parked_events WHERE consumer = ${consumerLiteral})`;

/** Every parked event, oldest first (readiness, `postline projections status`). */
export async function listParked(q: Queryable, limit = 100): Promise<ParkedEvent[]> {
  const { rows } = await q.query(
    `SELECT consumer, position, stream, type, error, attempts, parked_at, next_attempt_at
     FROM parked_events ORDER BY parked_at, position LIMIT $1`,
    [limit],
  );
  return rows.map((r) => ({
    consumer: r.consumer,
    position: r.position,
    stream: r.stream,
    type: r.type,
    error: r.error,
    attempts: r.attempts,
    parkedAt: new Date(r.parked_at).toISOString(),
    nextAttemptAt: new Date(r.next_attempt_at).toISOString(),
  }));
}

/** The consumers that have parked events, how many and since when (`/readyz`: names and counts, no ids). */
export async function stuckConsumers(
  q: Queryable,
): Promise<{ consumer: string; parked_events: number; since: string }[]> {
  const { rows } = await q.query(
    `SELECT consumer, count(*)::int AS n, min(parked_at) AS since FROM parked_events GROUP BY consumer ORDER BY consumer`,
  );
  return rows.map((r) => ({
    consumer: r.consumer,
    parked_events: r.n,
    since: new Date(r.since).toISOString(),
  }));
}
