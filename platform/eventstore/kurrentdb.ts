import {
  type AllStreamResolvedEvent,
  type AllStreamSubscription,
  BACKWARDS,
  END,
  excludeSystemEvents,
  FORWARDS,
  type JSONType,
  jsonEvent,
  START as KURRENT_START,
  KurrentDBClient,
  NO_STREAM,
  type ResolvedEvent,
  StreamNotFoundError,
  WrongExpectedVersionError,
} from '@kurrent/kurrentdb-client';
import { fromPosition, toPosition, toStreamState } from './kurrentdb-positions.ts';
import { Restart, Subscriptions } from './subscription.ts';
import {
  type AppendOptions,
  type AppendResult,
  applyUpcasters,
  type BlobRow,
  type EventMetadata,
  type EventStore,
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

const isSystemType = (type: string) => type.startsWith('$');

export interface KurrentEventStoreOptions {
  upcasters?: Record<string, Upcaster>;
  /** Writes the blob rows an append carries (the blob store's, in PostgreSQL), durably, before its events. */
  writeBlobs?: (blobs: BlobRow[]) => Promise<void>;
}

/**
 * The event store on KurrentDB (or EventStoreDB: the same gRPC protocol). Streams map one to one; the global
 * log is `$all` without system events (types starting with `$`). KurrentDB commits in log order, so a reader
 * of `$all` never sees an event that committed late behind its position.
 */
export class KurrentEventStore implements EventStore {
  readonly #client: KurrentDBClient;
  readonly #upcasters: Record<string, Upcaster>;
  readonly #writeBlobs: NonNullable<KurrentEventStoreOptions['writeBlobs']>;
  readonly #subscriptions = new Subscriptions();

  constructor(client: KurrentDBClient, options: KurrentEventStoreOptions = {}) {
    this.#client = client;
    this.#upcasters = options.upcasters ?? {};
    this.#writeBlobs =
      options.writeBlobs ?? (() => Promise.reject(new Error('no place for blob rows given')));
  }

  /** Connects with a connection string (`kurrentdb://host:2113?tls=false`) and checks that the server answers. */
  static async connect(url: string, options?: KurrentEventStoreOptions): Promise<KurrentEventStore> {
    const client = KurrentDBClient.connectionString(url);
    const store = new KurrentEventStore(client, options);
    try {
      await store.headPosition();
    } catch (error: any) {
      await client.dispose().catch(() => {});
      throw new Error(`KurrentDB at ${redact(url)} does not answer: ${error?.message ?? error}`, {
        cause: error,
      });
    }
    return store;
  }

  async append(streamId: string, events: NewEvent[], { expectedRevision, blobs }: AppendOptions) {
    if (events.length === 0) throw new Error('append needs at least one event');
    if (blobs?.length) await this.#writeBlobs(blobs);
    const data = events.map((e) =>
      jsonEvent({
        type: e.type,
        data: (e.data ?? {}) as JSONType,
        metadata: e.metadata as unknown as JSONType,
      }),
    );
    try {
      const result = await this.#client.appendToStream(streamId, data, {
        streamState: toStreamState(expectedRevision),
      });
      const position = result.position ? toPosition(result.position) : await this.#lastPosition(streamId);
      return { nextRevision: Number(result.nextExpectedRevision), position } satisfies AppendResult;
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) {
        const actual = error.actualState;
        throw new WrongExpectedRevisionError(
          streamId,
          expectedRevision,
          actual === NO_STREAM || actual === undefined || actual < 0n ? 'no_stream' : Number(actual),
        );
      }
      throw error;
    }
  }

  /** Servers older than 22.6 may not return the position of an append; read it back instead. */
  async #lastPosition(streamId: string): Promise<Position> {
    for await (const resolved of this.#client.readStream(streamId, {
      direction: BACKWARDS,
      fromRevision: END,
      maxCount: 1,
    })) {
      const e = this.#toEvent(resolved);
      if (e) return e.position;
    }
    throw new Error(`stream ${streamId}: appended events not found`);
  }

  #toEvent(resolved: ResolvedEvent | AllStreamResolvedEvent): StoredEvent | undefined {
    const e = resolved.event;
    if (!e || isSystemType(e.type)) return undefined;
    const position = e.position
      ? toPosition(e.position)
      : toPosition({ commit: resolved.commitPosition ?? 0n, prepare: resolved.commitPosition ?? 0n });
    return applyUpcasters(this.#upcasters, {
      streamId: e.streamId,
      revision: Number(e.revision),
      position,
      type: e.type,
      data: e.isJson ? e.data : Buffer.from(e.data as Uint8Array).toString('utf8'),
      metadata: (e.metadata ?? {}) as unknown as EventMetadata,
      createdAt: e.created,
    });
  }

  async readStream(streamId: string, options: { fromRevision?: number } = {}) {
    const events: StoredEvent[] = [];
    try {
      for await (const resolved of this.#client.readStream(streamId, {
        direction: FORWARDS,
        fromRevision: BigInt(options.fromRevision ?? 0),
      })) {
        const e = this.#toEvent(resolved);
        if (e) events.push(e);
      }
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return events;
  }

  async readAll(options: ReadAllOptions = {}) {
    const from = options.from ?? START;
    const limit = options.limit ?? 1000;
    const events: StoredEvent[] = [];
    // `fromPosition` is inclusive for reads of $all; ours is exclusive: read one more and drop `from` itself.
    for await (const resolved of this.#client.readAll({
      direction: FORWARDS,
      fromPosition: from === START ? KURRENT_START : fromPosition(from),
      maxCount: limit + 1,
      filter: excludeSystemEvents(),
    })) {
      const e = this.#toEvent(resolved);
      if (e && e.position > from) events.push(e);
      if (events.length === limit) break;
    }
    return events;
  }

  async headPosition() {
    for await (const resolved of this.#client.readAll({
      direction: BACKWARDS,
      fromPosition: END,
      maxCount: 1,
      filter: excludeSystemEvents(),
    })) {
      const e = this.#toEvent(resolved);
      if (e) return e.position;
    }
    return START;
  }

  subscribe(options: SubscribeOptions, handle: (events: StoredEvent[]) => Promise<void>): Subscription {
    const batchSize = options.batchSize ?? 500;
    /** Wakes the follower: new events, an error, the end of the server stream, or stop(). */
    let wake: (() => void) | undefined;
    const signal = () => {
      const w = wake;
      wake = undefined;
      w?.();
    };

    /** One server subscription from `start`: hands batches on until stopped or until it fails. */
    const follow = async (
      start: Position,
      deliver: (events: StoredEvent[]) => Promise<void>,
      stopped: () => boolean,
    ) => {
      let position = start;
      const sub: AllStreamSubscription = this.#client.subscribeToAll({
        fromPosition: start === START ? KURRENT_START : fromPosition(start),
        filter: excludeSystemEvents(),
        resolveLinkTos: false,
      });
      const buffer: StoredEvent[] = [];
      let failure: unknown;
      let ended = false;
      sub.on('data', (resolved: AllStreamResolvedEvent) => {
        const e = this.#toEvent(resolved);
        // The server starts after `start`; the guard keeps that true should it ever repeat `start` itself.
        if (e && e.position > start) buffer.push(e);
        if (buffer.length >= batchSize * 4 && !sub.isPaused()) sub.pause();
        signal();
      });
      sub.on('error', (error: unknown) => {
        failure = error;
        signal();
      });
      sub.on('end', () => {
        ended = true;
        signal();
      });
      sub.on('close', () => {
        ended = true;
        signal();
      });
      try {
        while (!stopped()) {
          if (failure) throw failure;
          if (buffer.length === 0) {
            if (ended) throw new Error('KurrentDB subscription ended');
            // No event can arrive between the check above and `wake` being set: both run in this same tick.
            await new Promise<void>((resolve) => {
              wake = resolve;
            });
            continue;
          }
          const batch = buffer.splice(0, batchSize);
          if (sub.isPaused() && buffer.length < batchSize * 2) sub.resume();
          // The consumer keeps its own checkpoint: if it moved (a rebuild, another runner), start again there.
          if (typeof options.from === 'function' && (await options.from()) !== position) throw new Restart();
          await deliver(batch);
          position = batch[batch.length - 1].position;
        }
      } finally {
        wake = undefined;
        sub.removeAllListeners('data');
        sub.on('error', () => {});
        await sub.unsubscribe().catch(() => {});
      }
    };

    return this.#subscriptions.start(options, handle, {
      follow,
      interrupt: signal,
      sleep: (ms) =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            wake = undefined;
            resolve();
          }, ms);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        }),
      head: () => this.headPosition(),
    });
  }

  async close() {
    await this.#subscriptions.stopAll();
    await this.#client.dispose();
  }
}

/** A connection string without its password, for messages. */
function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}
