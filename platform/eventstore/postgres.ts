import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Batcher } from '../batcher.ts';
import type { Database } from '../db/database.ts';
import {
  type AppendResult,
  applyUpcasters,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type Position,
  type ReadAllOptions,
  START,
  type StoredEvent,
  type SubscribeOptions,
  type Subscription,
  type Upcaster,
  WrongExpectedRevisionError,
} from './types.ts';

const CHANNEL = 'postline_events';

export const EVENTS_SCHEMA = `
CREATE TABLE IF NOT EXISTS events (
  global_position bigserial NOT NULL,
  tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
  stream_id text NOT NULL,
  stream_revision bigint NOT NULL,
  type text NOT NULL,
  data json NOT NULL,
  metadata json NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tx_id, global_position),
  UNIQUE (stream_id, stream_revision)
);
-- Earlier versions notified from a trigger, inside the appending transaction. PostgreSQL serialises the commits
-- of all transactions that NOTIFY (a cluster-wide lock held through the WAL flush), which cost concurrent
-- appends most of their throughput (bench/README.md). The store now notifies after commit instead.
DROP TRIGGER IF EXISTS events_notify ON events;
DROP FUNCTION IF EXISTS postline_notify_events();
-- Data and metadata were jsonb until 2026-11. The log is written once and read back whole, never queried inside:
-- json keeps the text as written (what an auditor replays) and costs a third less per append (bench/README.md).
DO $$ BEGIN IF (SELECT data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'events' AND column_name = 'data') = 'jsonb' THEN ALTER TABLE events ALTER COLUMN data TYPE json USING data::json, ALTER COLUMN metadata TYPE json USING metadata::json; END IF; END $$;
-- The primary key was global_position, beside an index on (tx_id, global_position) for the log's readers; no
-- query looks an event up by its position alone, so the readers' index is the key now (one index fewer to write).
DO $$ BEGIN IF (SELECT array_length(conkey, 1) FROM pg_constraint WHERE conrelid = 'events'::regclass AND contype = 'p') = 1 THEN CREATE UNIQUE INDEX IF NOT EXISTS events_tx_global_position ON events (tx_id, global_position); ALTER TABLE events DROP CONSTRAINT events_pkey, ADD CONSTRAINT events_pkey PRIMARY KEY USING INDEX events_tx_global_position; DROP INDEX IF EXISTS events_tx_position; END IF; END $$;
`;

// A position is (writing transaction id, global position), zero-padded so string order is log order.
const pad = (n: string | number) => String(n).padStart(20, '0');
const toPosition = (txId: string | number, globalPosition: string | number): Position =>
  `${pad(txId)}.${pad(globalPosition)}`;
const fromPosition = (p: Position): [string, string] => {
  if (p === START) return ['0', '0'];
  const [tx, pos] = p.split('.');
  return [String(BigInt(tx)), String(BigInt(pos))];
};

const UNIQUE_VIOLATION = '23505';
/** Past every position: what a NOTIFY without one announces. */
const UNKNOWN_POSITION: Position = '~';

/** How long an append's NOTIFY waits for others to share it (other processes' subscribers wake this much later). */
const NOTIFY_DELAY_MS = 2;

const APPEND_SQL = `
WITH cur AS (
  SELECT coalesce(max(stream_revision), -1) AS rev FROM events WHERE stream_id = $1
), ok AS (
  SELECT rev FROM cur WHERE CASE $2::text
    WHEN 'any' THEN true
    WHEN 'no_stream' THEN rev = -1
    WHEN 'stream_exists' THEN rev >= 0
    ELSE rev = $3::bigint END
)
INSERT INTO events (stream_id, stream_revision, type, data, metadata)
SELECT $1, ok.rev + x.ord, x.e->>'type', x.e->'data', x.e->'metadata'
FROM ok, json_array_elements($4::json) WITH ORDINALITY AS x(e, ord)
RETURNING global_position::text AS position, stream_revision, tx_id::text AS tx`;

// `no_stream` and an exact revision (what commands use) need no look-up of the stream's last revision first:
// insert right after the expected one (-1 for no stream). The unique (stream, revision) key turns a writer that
// came first into a unique violation, and the EXISTS guard refuses an expected revision the stream has not
// reached. Revisions have no gaps, so together they mean "the last revision is the expected one". One event (the
// usual case) and many differ only in how the rows are made; both plan far faster than APPEND_SQL.
const APPEND_ONE_AFTER_SQL = `
INSERT INTO events (stream_id, stream_revision, type, data, metadata)
SELECT $1, $2::bigint + 1, $3, $4::json, $5::json
WHERE $2::bigint = -1 OR EXISTS (SELECT 1 FROM events WHERE stream_id = $1 AND stream_revision = $2::bigint)
RETURNING global_position::text AS position, stream_revision, tx_id::text AS tx`;
const APPEND_MANY_AFTER_SQL = `
INSERT INTO events (stream_id, stream_revision, type, data, metadata)
SELECT $1, $2::bigint + x.ord, x.t, x.d, x.m
FROM unnest($3::text[], $4::json[], $5::json[]) WITH ORDINALITY AS x(t, d, m, ord)
WHERE $2::bigint = -1 OR EXISTS (SELECT 1 FROM events WHERE stream_id = $1 AND stream_revision = $2::bigint)
ORDER BY x.ord
RETURNING global_position::text AS position, stream_revision, tx_id::text AS tx`;

// Several appends, each after its exact revision, in one statement: rows come as one JSON parameter (cheaper
// to build and to parse than escaped arrays), in order; each stream's guard is the one of APPEND_ONE_AFTER_SQL.
const APPEND_BATCH_SQL = `
INSERT INTO events (stream_id, stream_revision, type, data, metadata)
SELECT x.s, x.r, x.t, x.d, x.m
FROM json_to_recordset($1::json) AS x(o int, s text, a bigint, r bigint, t text, d json, m json)
LEFT JOIN LATERAL (
  SELECT true AS found FROM events e WHERE x.a >= 0 AND e.stream_id = x.s AND e.stream_revision = x.a LIMIT 1
) previous ON true
WHERE x.a = -1 OR previous.found
ORDER BY x.o
RETURNING stream_id, stream_revision, global_position::text AS position, tx_id::text AS tx`;

interface ExactAppend {
  streamId: string;
  /** The expected revision: -1 for a stream that must not exist yet. */
  after: number;
  events: NewEvent[];
}

type InsertedRow = { position: string; stream_revision: number; tx: string };
const resultOf = (rows: InsertedRow[]): AppendResult => {
  const last = rows[rows.length - 1];
  return { nextRevision: Number(last.stream_revision), position: toPosition(last.tx, last.position) };
};

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

/**
 * The event store on PostgreSQL (or PGlite: the same SQL).
 *
 * Readers of the global log see only rows whose writing transaction id is below the oldest transaction
 * still running (`pg_snapshot_xmin`), ordered by (transaction id, position). A plain `position > checkpoint`
 * reader would skip an event whose transaction took its sequence number early but committed late.
 */
export class PostgresEventStore implements EventStore {
  readonly #db: Database;
  readonly #upcasters: Record<string, Upcaster>;
  readonly #wake = new EventEmitter();
  /** Append notifications received so far. */
  #appends = 0;
  /**
   * The furthest position appends were announced at (by this store, NOTIFY or `appended`): a read that comes up
   * empty below it was held back by an older transaction and is tried again soon; one at or past it is not.
   */
  #announced: Position = START;
  /** The furthest position this store appended at: what its next NOTIFY announces. */
  #toAnnounce: Position = START;
  #unlisten?: Promise<() => Promise<void>>;
  readonly #subscriptions = new Set<Subscription>();
  #notifying = false;
  #notifyAgain = false;
  #closed = false;
  #notified: Promise<void> = Promise.resolve();
  readonly pollMs: number;
  /** Signs this store's NOTIFYs, so that it does not wake itself twice. */
  readonly #id = randomUUID();

  constructor(db: Database, options: { upcasters?: Record<string, Upcaster>; pollMs?: number } = {}) {
    this.#db = db;
    this.#upcasters = options.upcasters ?? {};
    this.pollMs = options.pollMs ?? 1000;
    this.#wake.setMaxListeners(0);
  }

  static async create(db: Database, options?: ConstructorParameters<typeof PostgresEventStore>[1]) {
    await db.exec(`SELECT pg_advisory_lock(7331);${EVENTS_SCHEMA}SELECT pg_advisory_unlock(7331);`);
    return new PostgresEventStore(db, options);
  }

  async append(
    streamId: string,
    events: NewEvent[],
    { expectedRevision }: { expectedRevision: ExpectedRevision },
  ): Promise<AppendResult> {
    if (events.length === 0) throw new Error('append needs at least one event');
    if (expectedRevision === 'any' || expectedRevision === 'stream_exists') {
      const result = await this.#appendLookingUp(streamId, events, expectedRevision);
      this.#notify(result.position);
      return result;
    }
    return this.#writes.add({
      streamId,
      after: expectedRevision === 'no_stream' ? -1 : expectedRevision,
      events,
    });
  }

  /**
   * Appends with an exact expectation (what commands use) share one INSERT and one commit with the others in
   * flight (group commit): under load, one round trip serves many requests. A batch never holds two appends to
   * one stream. A stream whose guard fails gets its conflict alone; a unique violation (a concurrent writer took
   * a revision) fails the statement, and then each append of the batch is tried on its own.
   */
  readonly #writes = new Batcher<ExactAppend, AppendResult>({
    maxInFlight: 2,
    maxWeight: 1000,
    weight: (a) => a.events.length,
    key: (a) => a.streamId,
    run: async (batch) => {
      const results =
        batch.length === 1
          ? [await this.#appendAfter(batch[0]).catch((e) => e)]
          : await this.#appendBatch(batch);
      let last: Position | undefined;
      for (const r of results)
        if (!(r instanceof Error) && (last === undefined || r.position > last)) last = r.position;
      if (last !== undefined) this.#notify(last);
      return results;
    },
  });

  async #appendBatch(batch: ExactAppend[]): Promise<(AppendResult | Error)[]> {
    let o = 0;
    const rows = batch.flatMap((a) =>
      a.events.map((e, i) => ({
        o: o++,
        s: a.streamId,
        a: a.after,
        r: a.after + i + 1,
        t: e.type,
        d: e.data ?? {},
        m: e.metadata,
      })),
    );
    let inserted: (InsertedRow & { stream_id: string })[];
    try {
      ({ rows: inserted } = await this.#db.query(APPEND_BATCH_SQL, [JSON.stringify(rows)]));
    } catch (error: any) {
      if (error?.code !== UNIQUE_VIOLATION) throw error;
      return Promise.all(batch.map((a) => this.#appendAfter(a).catch((e) => e)));
    }
    // Rows come back in insert order: each stream's last one is its result.
    const last = new Map<string, AppendResult>();
    for (const row of inserted) last.set(row.stream_id, resultOf([row]));
    return Promise.all(
      batch.map(
        async (a) =>
          last.get(a.streamId) ?? (await this.#conflict(a.streamId, a.after < 0 ? 'no_stream' : a.after)),
      ),
    );
  }

  /** One append after an exact revision (-1: a new stream). */
  async #appendAfter({ streamId, after, events }: ExactAppend): Promise<AppendResult> {
    let sql: string;
    let params: unknown[];
    if (events.length === 1) {
      sql = APPEND_ONE_AFTER_SQL;
      const [e] = events;
      params = [streamId, after, e.type, JSON.stringify(e.data ?? {}), JSON.stringify(e.metadata)];
    } else {
      sql = APPEND_MANY_AFTER_SQL;
      params = [
        streamId,
        after,
        events.map((e) => e.type),
        events.map((e) => JSON.stringify(e.data ?? {})),
        events.map((e) => JSON.stringify(e.metadata)),
      ];
    }
    const expected = after < 0 ? 'no_stream' : after;
    try {
      const { rows } = await this.#db.query<InsertedRow>(sql, params);
      if (rows.length === 0) throw await this.#conflict(streamId, expected);
      return resultOf(rows);
    } catch (error: any) {
      if (error?.code !== UNIQUE_VIOLATION) throw error;
      throw await this.#conflict(streamId, expected);
    }
  }

  /** `any` and `stream_exists` depend on the stream's last revision: looked up in the same statement. */
  async #appendLookingUp(streamId: string, events: NewEvent[], expected: 'any' | 'stream_exists') {
    const params = [
      streamId,
      expected,
      null,
      JSON.stringify(events.map((e) => ({ type: e.type, data: e.data ?? {}, metadata: e.metadata }))),
    ];
    for (let attempt = 0; ; attempt++) {
      try {
        const { rows } = await this.#db.query<InsertedRow>(APPEND_SQL, params);
        if (rows.length === 0) throw await this.#conflict(streamId, expected);
        return resultOf(rows);
      } catch (error: any) {
        if (error?.code !== UNIQUE_VIOLATION) throw error;
        // A concurrent writer took the revision. With `any` that is no conflict: try again.
        if (expected !== 'any' || attempt > 20) throw await this.#conflict(streamId, expected);
      }
    }
  }

  /**
   * Wakes subscribers after an append committed: those of this process at once, those of other processes
   * through NOTIFY, sent outside the appending transaction, at most NOTIFY_DELAY_MS later. Appends in the same
   * moment share one NOTIFY; one that commits while a NOTIFY is in flight asks for one more after it.
   * PGlite has a single owner (this process), so it needs no NOTIFY. The payload carries the position.
   */
  #notify(position: Position) {
    this.appended(position);
    if (this.#db.kind === 'pglite') return;
    if (position > this.#toAnnounce) this.#toAnnounce = position;
    if (this.#notifying) {
      this.#notifyAgain = true;
      return;
    }
    this.#notifying = true;
    this.#notified = (async () => {
      do {
        // Let the appends of the next moment share this NOTIFY: they commit before it is sent.
        await new Promise((resolve) => setTimeout(resolve, NOTIFY_DELAY_MS));
        this.#notifyAgain = false;
        const payload = `${this.#id} ${this.#toAnnounce}`;
        // NOTIFY gives its transaction an id, and so a commit record: no need to wait for that to reach disk.
        await this.#db
          .exec(
            `BEGIN; SET LOCAL synchronous_commit TO off; SELECT pg_notify('${CHANNEL}', '${payload}'); COMMIT`,
          )
          .catch(() => {});
      } while (this.#notifyAgain && !this.#closed);
      this.#notifying = false;
    })();
  }

  async #conflict(streamId: string, expected: ExpectedRevision) {
    const { rows } = await this.#db.query<{ rev: number | null }>(
      'SELECT max(stream_revision) AS rev FROM events WHERE stream_id = $1',
      [streamId],
    );
    const rev = rows[0]?.rev;
    return new WrongExpectedRevisionError(
      streamId,
      expected,
      rev === null || rev === undefined ? 'no_stream' : Number(rev),
    );
  }

  #toEvent = (row: any): StoredEvent => applyUpcasters(this.#upcasters, eventOf(row));

  async readStream(streamId: string, options: { fromRevision?: number } = {}) {
    const { rows } = await this.#db.query(
      `SELECT ${SELECT_COLUMNS} FROM events WHERE stream_id = $1 AND stream_revision >= $2 ORDER BY stream_revision`,
      [streamId, options.fromRevision ?? 0],
    );
    return rows.map(this.#toEvent);
  }

  async readAll(options: ReadAllOptions = {}) {
    const from = options.from ?? START;
    const limit = options.limit ?? 1000;
    const events = await this.#readAll(from, limit, 'cluster');
    // Nothing: perhaps held back by a transaction of another database of the cluster. Look closer.
    return events.length > 0 ? events : this.#readAll(from, limit, 'database');
  }

  /** `bound`: which running transactions hold readers back (see OWN_DATABASE_BOUND). */
  async #readAll(from: Position, limit: number, bound: 'cluster' | 'database') {
    const [tx, pos] = fromPosition(from);
    const { rows } = await this.#db.query(
      `SELECT ${SELECT_COLUMNS} FROM events
       WHERE (tx_id, global_position) > ($1::xid8, $2::bigint)
         AND tx_id < ${bound === 'cluster' ? 'pg_snapshot_xmin(pg_current_snapshot())' : OWN_DATABASE_BOUND}
       ORDER BY events.tx_id, events.global_position LIMIT $3`,
      [tx, pos, limit],
    );
    return rows.map(this.#toEvent);
  }

  async headPosition(options: { committed?: boolean } = {}) {
    // The cheap bound, as `readAll` uses first: a head past what a non-empty read can return would be a lie.
    const visible = options.committed ? '' : 'WHERE tx_id < pg_snapshot_xmin(pg_current_snapshot())';
    const { rows } = await this.#db.query<{ tx: string; global_position: string }>(
      `SELECT tx_id::text AS tx, global_position::text AS global_position FROM events ${visible}
       ORDER BY events.tx_id DESC, events.global_position DESC LIMIT 1`,
    );
    return rows.length ? toPosition(rows[0].tx, rows[0].global_position) : START;
  }

  /**
   * Wakes this store's subscribers as a NOTIFY would, for an append at `position` that committed elsewhere: the
   * projection runner's thread is told so by the main thread when a request waits for it, without the NOTIFY's
   * delay.
   */
  appended(position: Position): void {
    if (position > this.#announced) this.#announced = position;
    this.#appends++;
    this.#wake.emit('append');
  }

  #listening(): Promise<unknown> {
    this.#unlisten ??= this.#db.listen(CHANNEL, (payload) => {
      const [sender, position] = payload.split(' ');
      // This store's own appends woke its subscribers already. A payload without a position (an older
      // version's) announces an unknown one: reads held back are tried again as before.
      if (sender !== this.#id) this.appended(position ?? UNKNOWN_POSITION);
    });
    return this.#unlisten;
  }

  /**
   * Resolves on the next append notification (true) or after `ms` or a call to look now (false), whichever is
   * first. `seen` is the append count the caller read at: a notification that came while it was busy returns at
   * once.
   */
  async #waitForAppend(ms: number, seen: number): Promise<boolean> {
    await this.#listening();
    if (this.#appends !== seen) return true;
    return new Promise<boolean>((resolve) => {
      const done = (notified: boolean) => {
        clearTimeout(timer);
        this.#wake.off('append', notify);
        this.#wake.off('look', look);
        resolve(notified);
      };
      const notify = () => done(true);
      const look = () => done(false);
      const timer = setTimeout(look, ms);
      this.#wake.on('append', notify);
      this.#wake.on('look', look);
    });
  }

  subscribe(options: SubscribeOptions, handle: (events: StoredEvent[]) => Promise<void>) {
    let position = typeof options.from === 'function' ? START : (options.from ?? START);
    let stopped = false;
    const batchSize = options.batchSize ?? 500;
    const waiters: { target: Position; resolve: () => void }[] = [];
    const settle = () => {
      for (let i = waiters.length - 1; i >= 0; i--) {
        if (waiters[i].target <= position) waiters.splice(i, 1)[0].resolve();
      }
    };
    const loop = (async () => {
      let failures = 0;
      // Reads that came up empty right after a notification: an older transaction still holds the
      // events back, so look again soon (backing off) instead of waiting a whole poll interval.
      let heldBack = 0;
      while (!stopped) {
        try {
          await this.#listening();
          let seen = this.#appends;
          if (typeof options.from === 'function') position = await options.from();
          const events = await this.readAll({ from: position, limit: batchSize });
          if (events.length > 0) {
            await handle(events);
            position = events[events.length - 1].position;
            failures = 0;
            heldBack = 0;
          } else if (heldBack > 0) heldBack = this.#announced > position ? heldBack + 1 : 0;
          settle();
          while (events.length < batchSize && !stopped) {
            const wait = heldBack > 0 ? Math.min(2 ** heldBack, this.pollMs) : this.pollMs;
            const notified = await this.#waitForAppend(wait, seen);
            // Told only of appends already read (a wake-up, then the NOTIFY of the same appends): nothing to
            // read, wait on.
            if (notified && heldBack === 0 && this.#announced <= position && !stopped) {
              seen = this.#appends;
              continue;
            }
            if (notified && heldBack === 0) heldBack = 1;
            break;
          }
        } catch {
          if (stopped) break;
          failures++;
          await new Promise((r) => setTimeout(r, Math.min(5000, 50 * 2 ** failures)));
        }
      }
    })();
    const subscription: Subscription = {
      stop: async () => {
        stopped = true;
        this.#wake.emit('look');
        await loop;
        this.#subscriptions.delete(subscription);
        for (const w of waiters.splice(0)) w.resolve();
      },
      caughtUp: async () => {
        // Everything committed, visible to readers yet or not: an older transaction still running elsewhere
        // may hold events back for a moment, and "caught up" must wait for them.
        const target = await this.headPosition({ committed: true });
        if (target <= position) return;
        await new Promise<void>((resolve) => {
          waiters.push({ target, resolve });
          this.appended(target);
        });
      },
    };
    this.#subscriptions.add(subscription);
    return subscription;
  }

  async close() {
    this.#closed = true;
    await Promise.all([...this.#subscriptions].map((s) => s.stop()));
    await this.#notified;
    if (this.#unlisten) await (await this.#unlisten)();
  }
}
