import { EventEmitter } from 'node:events';
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
  global_position bigserial PRIMARY KEY,
  tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
  stream_id text NOT NULL,
  stream_revision bigint NOT NULL,
  type text NOT NULL,
  data jsonb NOT NULL,
  metadata jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (stream_id, stream_revision)
);
CREATE INDEX IF NOT EXISTS events_tx_position ON events (tx_id, global_position);
-- Earlier versions notified from a trigger, inside the appending transaction. PostgreSQL serialises the commits
-- of all transactions that NOTIFY (a cluster-wide lock held through the WAL flush), which cost concurrent
-- appends most of their throughput (bench/README.md). The store now notifies after commit instead.
DROP TRIGGER IF EXISTS events_notify ON events;
DROP FUNCTION IF EXISTS postline_notify_events();
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
FROM ok, jsonb_array_elements($4::jsonb) WITH ORDINALITY AS x(e, ord)
RETURNING global_position::text AS position, stream_revision, tx_id::text AS tx`;

// The output names shadow the columns in ORDER BY (where `global_position` would then sort as text):
// queries order by `events.tx_id, events.global_position`, qualified.
const SELECT_COLUMNS = `global_position::text AS global_position, tx_id::text AS tx, stream_id, stream_revision, type, data, metadata, created_at`;

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
  #unlisten?: Promise<() => Promise<void>>;
  readonly #subscriptions = new Set<Subscription>();
  #notifying = false;
  #notifyAgain = false;
  #closed = false;
  #notified: Promise<void> = Promise.resolve();
  readonly pollMs: number;

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

  async append(streamId: string, events: NewEvent[], { expectedRevision }: { expectedRevision: ExpectedRevision }) {
    if (events.length === 0) throw new Error('append needs at least one event');
    const mode = typeof expectedRevision === 'number' ? 'exact' : expectedRevision;
    const exact = typeof expectedRevision === 'number' ? expectedRevision : null;
    const payload = JSON.stringify(events.map((e) => ({ type: e.type, data: e.data ?? {}, metadata: e.metadata })));
    for (let attempt = 0; ; attempt++) {
      try {
        const { rows } = await this.#db.query<{ position: string; stream_revision: number; tx: string }>(
          APPEND_SQL,
          [streamId, mode, exact, payload],
        );
        if (rows.length === 0) throw await this.#conflict(streamId, expectedRevision);
        const last = rows[rows.length - 1];
        this.#notify();
        return { nextRevision: Number(last.stream_revision), position: toPosition(last.tx, last.position) } satisfies AppendResult;
      } catch (error: any) {
        if (error?.code !== UNIQUE_VIOLATION) throw error;
        // A concurrent writer took the revision. With `any` that is no conflict: try again.
        if (expectedRevision !== 'any' || attempt > 20) throw await this.#conflict(streamId, expectedRevision);
      }
    }
  }

  /**
   * Wakes subscribers after an append committed: those of this process at once, those of other processes
   * through NOTIFY, sent outside the appending transaction. Concurrent appends share one NOTIFY: one is sent
   * after each append, but while one is in flight the next appends only ask for one more after it.
   * PGlite has a single owner (this process), so it needs no NOTIFY.
   */
  #notify() {
    this.#wake.emit('append');
    if (this.#db.kind === 'pglite') return;
    if (this.#notifying) {
      this.#notifyAgain = true;
      return;
    }
    this.#notifying = true;
    this.#notified = (async () => {
      do {
        this.#notifyAgain = false;
        await this.#db.query(`SELECT pg_notify('${CHANNEL}', '')`).catch(() => {});
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
    return new WrongExpectedRevisionError(streamId, expected, rev === null || rev === undefined ? 'no_stream' : Number(rev));
  }

  #toEvent = (row: any): StoredEvent =>
    applyUpcasters(this.#upcasters, {
      streamId: row.stream_id,
      revision: Number(row.stream_revision),
      position: toPosition(row.tx, row.global_position),
      type: row.type,
      data: row.data,
      metadata: row.metadata,
      createdAt: new Date(row.created_at),
    });

  async readStream(streamId: string, options: { fromRevision?: number } = {}) {
    const { rows } = await this.#db.query(
      `SELECT ${SELECT_COLUMNS} FROM events WHERE stream_id = $1 AND stream_revision >= $2 ORDER BY stream_revision`,
      [streamId, options.fromRevision ?? 0],
    );
    return rows.map(this.#toEvent);
  }

  async readAll(options: ReadAllOptions = {}) {
    const [tx, pos] = fromPosition(options.from ?? START);
    const { rows } = await this.#db.query(
      `SELECT ${SELECT_COLUMNS} FROM events
       WHERE (tx_id, global_position) > ($1::xid8, $2::bigint) AND tx_id < pg_snapshot_xmin(pg_current_snapshot())
       ORDER BY events.tx_id, events.global_position LIMIT $3`,
      [tx, pos, options.limit ?? 1000],
    );
    return rows.map(this.#toEvent);
  }

  async headPosition() {
    const { rows } = await this.#db.query<{ tx: string; global_position: string }>(
      `SELECT tx_id::text AS tx, global_position::text AS global_position FROM events
       WHERE tx_id < pg_snapshot_xmin(pg_current_snapshot())
       ORDER BY events.tx_id DESC, events.global_position DESC LIMIT 1`,
    );
    return rows.length ? toPosition(rows[0].tx, rows[0].global_position) : START;
  }

  #listening(): Promise<unknown> {
    this.#unlisten ??= this.#db.listen(CHANNEL, () => {
      this.#appends++;
      this.#wake.emit('append');
    });
    return this.#unlisten;
  }

  /**
   * Resolves on the next append notification (true) or after `ms` (false), whichever is first. `seen` is the
   * append count the caller read at: a notification that came while it was busy returns at once.
   */
  async #waitForAppend(ms: number, seen: number): Promise<boolean> {
    await this.#listening();
    if (this.#appends !== seen) return true;
    return new Promise<boolean>((resolve) => {
      const done = (notified = true) => {
        clearTimeout(timer);
        this.#wake.off('append', done);
        this.#wake.off('stop', done);
        resolve(notified);
      };
      const timer = setTimeout(() => done(false), ms);
      this.#wake.on('append', done);
      this.#wake.on('stop', done);
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
          const seen = this.#appends;
          if (typeof options.from === 'function') position = await options.from();
          const events = await this.readAll({ from: position, limit: batchSize });
          if (events.length > 0) {
            await handle(events);
            position = events[events.length - 1].position;
            failures = 0;
            heldBack = 0;
          } else if (heldBack > 0) heldBack++;
          settle();
          if (events.length < batchSize && !stopped) {
            const wait = heldBack > 0 ? Math.min(2 ** heldBack, this.pollMs) : this.pollMs;
            const notified = await this.#waitForAppend(wait, seen);
            if (notified && heldBack === 0) heldBack = 1;
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
        this.#wake.emit('stop');
        await loop;
        this.#subscriptions.delete(subscription);
        for (const w of waiters.splice(0)) w.resolve();
      },
      caughtUp: async () => {
        const target = await this.headPosition();
        if (target <= position) return;
        await new Promise<void>((resolve) => {
          waiters.push({ target, resolve });
          this.#wake.emit('append');
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
