import { type Database, prepared } from '../../db/database.ts';
import { type Position, START, type StoredEvent } from '../types.ts';
import { fromPosition, toPosition } from './schema.ts';

/**
 * The oldest running transaction that may still write to this database's events: the snapshot's running
 * transactions, less those that PostgreSQL lists as another database's (their writes never land here). The
 * snapshot's own xmin is cluster-wide: a long write in any database of a shared server would hold every reader
 * back. Transactions that ended since the snapshot, or that `pg_stat_activity` does not show, are kept (the bound
 * only errs low). It costs a look at every backend, so `readAll` uses it only when the cheap bound gave nothing.
 */
const OWN_DATABASE_BOUND = `(
  SELECT coalesce(min(x), pg_snapshot_xmax(pg_current_snapshot()))
  FROM pg_snapshot_xip(pg_current_snapshot()) AS x
  WHERE (x::text::bigint % 4294967296) NOT IN (
    SELECT a.backend_xid::text::bigint FROM pg_stat_get_activity(NULL) AS a
    WHERE a.backend_xid IS NOT NULL AND a.datid <> (SELECT oid FROM pg_database WHERE datname = current_database())
  )
)`;

// The output names shadow the columns in ORDER BY (where `global_position` would then sort as text):
// queries order by `events.tx_id, events.global_position`, qualified. The time comes as microseconds since the
// epoch (a double, exact to well under one): far cheaper to read than a timestamp's text.
const SELECT_COLUMNS = `global_position::text AS global_position, tx_id::text AS tx, stream_id, stream_revision, type, data::text AS data, metadata, date_part('epoch', created_at) * 1000000 AS created_us`;

/** A Date has milliseconds: the microseconds are cut off, as a timestamp's text would be. */
const dateOf = (micros: number) => new Date(Math.floor(Math.round(micros) / 1000));

/**
 * An event from its row. Its data is parsed on first use: most consumers of the log skip most event types, and
 * an email's data (bodies included) is the bulk of what a reader fetches. The accessor is part of the literal
 * (far cheaper to make than with defineProperty) and enumerable, so a spread copy of the event has its data.
 */
function eventOf(row: any): StoredEvent {
  const text: string = row.data;
  let value: unknown;
  let parsed = false;
  return {
    streamId: row.stream_id,
    revision: Number(row.stream_revision),
    position: toPosition(row.tx, row.global_position),
    type: row.type,
    metadata: row.metadata,
    createdAt: dateOf(row.created_us),
    get data() {
      if (!parsed) {
        value = JSON.parse(text);
        parsed = true;
      }
      return value;
    },
    set data(v) {
      value = v;
      parsed = true;
    },
  };
}

const READ_STREAM = prepared(
  `SELECT ${SELECT_COLUMNS} FROM events WHERE stream_id = $1 AND stream_revision >= $2 ORDER BY stream_revision`,
);

/** Events after ($1, $2) below the running transactions that `bound` names, `$3` at most, in log order. */
const readLogSql = (bound: string) =>
  prepared(`SELECT ${SELECT_COLUMNS} FROM events
     WHERE (tx_id, global_position) > ($1::xid8, $2::bigint) AND tx_id < ${bound}
     ORDER BY events.tx_id, events.global_position LIMIT $3`);
const READ_LOG = {
  cluster: readLogSql('pg_snapshot_xmin(pg_current_snapshot())'),
  database: readLogSql(OWN_DATABASE_BOUND),
};

// Several streams' reads in one statement: each read's events in order, after those of the reads before it. Each
// stream is read laterally, by the index scan READ_STREAM makes, whatever the planner guesses of the list's length.
const READ_STREAMS = prepared(
  `SELECT e.*, r.i FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS r(s, f, i)
   CROSS JOIN LATERAL (
     SELECT ${SELECT_COLUMNS} FROM events WHERE stream_id = r.s AND stream_revision >= r.f ORDER BY stream_revision
   ) e
   ORDER BY r.i, e.stream_revision`,
);

export interface StreamRead {
  streamId: string;
  fromRevision: number;
}

/**
 * Each stream's events from its `fromRevision`, one statement for them all. A lone read (the common case) keeps
 * its plain statement: READ_STREAMS costs PostgreSQL about twice its CPU (unnest, lateral join, sort).
 */
export async function readStreamsEvents(db: Database, reads: StreamRead[]): Promise<StoredEvent[][]> {
  if (reads.length === 1) {
    const { rows } = await db.query(READ_STREAM, [reads[0].streamId, reads[0].fromRevision]);
    return [rows.map(eventOf)];
  }
  const { rows } = await db.query<{ i: string }>(READ_STREAMS, [
    reads.map((r) => r.streamId),
    reads.map((r) => r.fromRevision),
  ]);
  const events: StoredEvent[][] = reads.map(() => []);
  for (const row of rows) events[Number(row.i) - 1].push(eventOf(row));
  return events;
}

/** Up to `limit` events of the log after `from`, in log order, none that an older transaction may still precede. */
export async function readLog(db: Database, from: Position, limit: number): Promise<StoredEvent[]> {
  const events = await readLogBelow(db, from, limit, 'cluster');
  // Nothing: perhaps held back by a transaction of another database of the cluster. Look closer.
  if (events.length > 0) return events;
  return readLogBelow(db, from, limit, 'database');
}

/** `bound`: which running transactions hold readers back (see OWN_DATABASE_BOUND). */
async function readLogBelow(db: Database, from: Position, limit: number, bound: 'cluster' | 'database') {
  const [tx, pos] = fromPosition(from);
  const { rows } = await db.query(READ_LOG[bound], [tx, pos, limit]);
  return rows.map(eventOf);
}

/** The newest event's position that `readLog` could return now; `committed`: of the newest event committed. */
export async function headPosition(db: Database, committed: boolean): Promise<Position> {
  // The cheap bound, as `readLog` uses first: a head past what a non-empty read can return would be a lie.
  const visible = committed ? '' : 'WHERE tx_id < pg_snapshot_xmin(pg_current_snapshot())';
  const { rows } = await db.query<{ tx: string; global_position: string }>(
    `SELECT tx_id::text AS tx, global_position::text AS global_position FROM events ${visible}
     ORDER BY events.tx_id DESC, events.global_position DESC LIMIT 1`,
  );
  return rows.length ? toPosition(rows[0].tx, rows[0].global_position) : START;
}
