import { Batcher, GROUP_COMMIT } from '../../batcher.ts';
import type { Database } from '../../db/database.ts';
import { migrate } from '../../db/migrations.ts';
import { type LogFollower, Subscriptions } from '../subscription.ts';
import {
  type AppendOptions,
  type AppendResult,
  applyUpcasters,
  type EventStore,
  type NewEvent,
  type Position,
  type ReadAllOptions,
  START,
  type StoredEvent,
  type SubscribeOptions,
  type Upcaster,
} from '../types.ts';
import { appendAfter, appendBatch, appendLookingUp, type ExactAppend } from './append.ts';
import { AppendNotifier } from './notifier.ts';
import { headPosition, readLog, readStreamsEvents, type StreamRead } from './read.ts';
import { eventStoreMigrations } from './schema.ts';

/** A batch of appends holds 1,000 events, or fewer with their blobs: one event's worth per 4 KiB of blob rows. */
const BLOB_BYTES_PER_EVENT = 4096;
const blobBytes = (a: ExactAppend) => a.blobs?.reduce((sum, b) => sum + b.bytes.length, 0) ?? 0;

/**
 * The event store on PostgreSQL. Its parts: the table (`schema.ts`), appends
 * (`append.ts`), reads (`read.ts`) and who hears of appends (`notifier.ts`); here they are put together, with
 * how to follow the log for the one subscription loop (`../subscription.ts`).
 *
 * Readers of the global log see only rows whose writing transaction id is below the oldest transaction
 * still running (`pg_snapshot_xmin`), ordered by (transaction id, position). A plain `position > checkpoint`
 * reader would skip an event whose transaction took its sequence number early but committed late.
 */
export class PostgresEventStore implements EventStore {
  readonly #db: Database;
  readonly #upcasters: Record<string, Upcaster>;
  readonly #notifier: AppendNotifier;
  readonly #subscriptions = new Subscriptions();
  readonly pollMs: number;

  /**
   * `wakeAfterMs`: this store's subscribers hear of appends (their own and other processes' NOTIFYs) this much
   * later, all appends in the meantime sharing one wake-up (see notifier.ts).
   */
  constructor(
    db: Database,
    options: {
      upcasters?: Record<string, Upcaster>;
      pollMs?: number;
      wakeAfterMs?: number;
    } = {},
  ) {
    this.#db = db;
    this.#upcasters = options.upcasters ?? {};
    this.pollMs = options.pollMs ?? 1000;
    this.#notifier = new AppendNotifier(db, options);
  }

  static async create(db: Database, options?: ConstructorParameters<typeof PostgresEventStore>[1]) {
    await migrate(db, eventStoreMigrations);
    return new PostgresEventStore(db, options);
  }

  async append(
    streamId: string,
    events: NewEvent[],
    { expectedRevision, blobs }: AppendOptions,
  ): Promise<AppendResult> {
    if (events.length === 0) throw new Error('append needs at least one event');
    if (expectedRevision === 'any' || expectedRevision === 'stream_exists') {
      const result = await appendLookingUp(this.#db, streamId, events, expectedRevision, blobs);
      this.#notifier.committed(result.position);
      return result;
    }
    return this.#writes.add({
      streamId,
      after: expectedRevision === 'no_stream' ? -1 : expectedRevision,
      events,
      blobs,
    });
  }

  /**
   * Appends with an exact expectation (what commands use) share one INSERT and one commit with the others in
   * flight (group commit), their blob rows too: under load, one round trip serves many requests. One batch runs
   * at a time while batches are quick (GROUP_COMMIT): the appends made meanwhile gather for the next. A batch
   * never holds two appends to one stream. A stream whose guard fails gets its conflict alone; a unique violation
   * (a concurrent writer took a revision) fails the statement, and then each append of the batch is tried on its
   * own.
   */
  readonly #writes = new Batcher<ExactAppend, AppendResult>({
    ...GROUP_COMMIT,
    maxWeight: 1000,
    weight: (a) => a.events.length + Math.ceil(blobBytes(a) / BLOB_BYTES_PER_EVENT),
    key: (a) => a.streamId,
    run: async (batch) => {
      const results =
        batch.length === 1
          ? [await appendAfter(this.#db, batch[0]).catch((e) => e)]
          : await appendBatch(this.#db, batch);
      let last: Position | undefined;
      for (const r of results)
        if (!(r instanceof Error) && (last === undefined || r.position > last)) last = r.position;
      if (last !== undefined) this.#notifier.committed(last);
      return results;
    },
  });

  #upcast = (events: StoredEvent[]) => events.map((e) => applyUpcasters(this.#upcasters, e));

  /** Followers' reads of the log in flight, by where they read from, how much, and the appends heard before. */
  readonly #followReads = new Map<string, Promise<StoredEvent[]>>();

  /**
   * The followers of a process (every projection and process manager) read the log after the same append, from
   * the same position when they are caught up: one statement serves those that had heard of the same appends
   * (`heard`) when they read. A read that began before a follower heard of an append may miss that append's
   * events, so it is never shared with that follower.
   */
  async #followRead(from: Position, limit: number, heard: string): Promise<StoredEvent[]> {
    const key = `${from} ${limit} ${heard}`;
    let read = this.#followReads.get(key);
    if (!read) {
      read = this.readAll({ from, limit }).finally(() => this.#followReads.delete(key));
      this.#followReads.set(key, read);
    }
    return [...(await read)];
  }

  /**
   * Reads of streams in flight together share one statement, as appends do: commands decided at once (an import's
   * thousand contacts, many sessions' requests) read their streams in one round trip.
   */
  readonly #reads = new Batcher<StreamRead, StoredEvent[]>({
    ...GROUP_COMMIT,
    run: (reads) => readStreamsEvents(this.#db, reads),
  });

  async readStream(streamId: string, options: { fromRevision?: number } = {}) {
    return this.#upcast(await this.#reads.add({ streamId, fromRevision: options.fromRevision ?? 0 }));
  }

  async readAll(options: ReadAllOptions = {}) {
    return this.#upcast(await readLog(this.#db, options.from ?? START, options.limit ?? 1000));
  }

  headPosition(options: { committed?: boolean } = {}) {
    return headPosition(this.#db, options.committed === true);
  }

  /**
   * Wakes this store's subscribers as a NOTIFY would, for an append at `position` that committed elsewhere: the
   * projection runner's thread is told so by the main thread when a request waits for it, without the NOTIFY's
   * delay.
   */
  appended(position: Position): void {
    this.#notifier.appended(position);
  }

  subscribe(options: SubscribeOptions, handle: (events: StoredEvent[]) => Promise<void>) {
    const batchSize = options.batchSize ?? 500;
    const notifier = this.#notifier;
    // Reads that came up empty right after a notification: an older transaction still holds the events back, so
    // look again soon (backing off) instead of waiting a whole poll interval.
    let heldBack = 0;
    const follower: LogFollower = {
      follow: async (from, deliver, stopped) => {
        await notifier.listening();
        let seen = notifier.appends;
        const resumed = notifier.resumes;
        let position = from;
        const events = await this.#followRead(from, batchSize, `${seen} ${resumed}`);
        if (events.length > 0) {
          await deliver(events);
          position = events[events.length - 1].position;
          heldBack = 0;
        } else if (heldBack > 0) heldBack = notifier.announced > position ? heldBack + 1 : 0;
        while (events.length < batchSize && !stopped()) {
          const wait = heldBack > 0 ? Math.min(2 ** heldBack, this.pollMs) : this.pollMs;
          const notified = await notifier.waitForAppend(wait, seen, resumed, stopped);
          // Told only of appends already read (a wake-up, then the NOTIFY of the same appends): nothing to read,
          // wait on.
          if (notified && heldBack === 0 && notifier.announced <= position && !stopped()) {
            seen = notifier.appends;
            continue;
          }
          if (notified && heldBack === 0) heldBack = 1;
          break;
        }
      },
      interrupt: () => notifier.look(),
      // A LISTEN connection in place again (the database is back) ends the back-off at once.
      sleep: (ms) => notifier.sleep(ms),
      // Everything committed, visible to readers yet or not: an older transaction still running elsewhere may
      // hold events back for a moment, and "caught up" must wait for them.
      head: () => this.headPosition({ committed: true }),
      wanted: (target) => notifier.appended(target),
    };
    return this.#subscriptions.start(options, handle, follower);
  }

  async close() {
    await this.#subscriptions.stopAll();
    await this.#notifier.close();
  }
}
