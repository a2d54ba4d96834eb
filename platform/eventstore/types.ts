/**
 * The event store port. Adapters: PostgreSQL (`postgres/`) and KurrentDB (`kurrentdb.ts`),
 * held to one contract suite (test/contract/event-store.contract.ts).
 */

export type Mode = 'live' | 'test';

export interface EventMetadata {
  orgId: string;
  mode: Mode;
  /** Who caused it: an API key id, `smtp` (the relay), `mx` (a report that came back), `cli` or `system`. */
  actor: string;
  correlationId?: string;
  causationId?: string;
}

export interface NewEvent<T extends string = string, D = unknown> {
  type: T;
  data: D;
  metadata: EventMetadata;
}

/**
 * A position in the global log. Opaque to callers; adapters make it a fixed-width string so that
 * comparing two positions is comparing two strings (`comparePositions`).
 */
export type Position = string;
export const START: Position = '';

export const comparePositions = (a: Position, b: Position): number => (a < b ? -1 : a > b ? 1 : 0);

export interface StoredEvent<T extends string = string, D = unknown> extends NewEvent<T, D> {
  streamId: string;
  /** 0-based revision of the event in its stream. */
  revision: number;
  position: Position;
  createdAt: Date;
}

/** An event as a union member declares it: its type and the data that type carries. */
export interface TypedEvent {
  type: string;
  data: unknown;
}

/** The data of the member of the union `E` whose type is `T` (a command or state that carries the same fields). */
export type DataOf<E extends TypedEvent, T extends E['type']> = Extract<E, { type: T }>['data'];

/** A stored event of the union `E`, its data narrowed by its type (switch on `type`). */
export type Stored<E extends TypedEvent> = E extends unknown ? StoredEvent<E['type'], E['data']> : never;

/** Whether `event` is of one of `types`: then it is a stored event of the union `E`. */
export const isOneOf = <E extends TypedEvent>(
  event: StoredEvent,
  types: readonly E['type'][],
): event is Stored<E> => types.includes(event.type);

/** `no_stream`: the stream must not exist; `stream_exists`: it must; `any`; or the exact revision of its last event. */
export type ExpectedRevision = 'no_stream' | 'stream_exists' | 'any' | number;

export interface AppendResult {
  /** Revision of the last appended event. */
  nextRevision: number;
  /** Position of the last appended event. */
  position: Position;
}

export class WrongExpectedRevisionError extends Error {
  readonly streamId: string;
  readonly expected: ExpectedRevision;
  readonly actual: number | 'no_stream';
  constructor(streamId: string, expected: ExpectedRevision, actual: number | 'no_stream') {
    super(`stream ${streamId}: expected revision ${expected}, actual ${actual}`);
    this.streamId = streamId;
    this.expected = expected;
    this.actual = actual;
  }
}

export interface ReadAllOptions {
  /** Read events strictly after this position; START (the default) reads from the beginning. */
  from?: Position;
  limit?: number;
}

export interface SubscribeOptions {
  /**
   * Where to start: after this position, or, as a function, asked again before every read. The function form
   * lets a consumer keep its checkpoint in its own table (projections) and move it (rebuilds).
   */
  from?: Position | (() => Promise<Position>);
  batchSize?: number;
}

export interface Subscription {
  stop(): Promise<void>;
  /** Resolves when the subscription has handled everything committed before the call. */
  caughtUp(): Promise<void>;
}

/** Turns an old shape of an event into the current one as it is read; events on disk never change. */
export type Upcaster = (event: StoredEvent) => StoredEvent;

/** A small blob (platform/blob-store.ts) that events name, written with them as a row of the database. */
export interface BlobRow {
  key: string;
  bytes: Buffer;
}

export interface AppendOptions {
  expectedRevision: ExpectedRevision;
  /**
   * Blobs the events name, stored no later than they are: never an event whose blob is missing. The PostgreSQL
   * store commits them in the events' statement (a message's bytes and its event share one commit); a store with
   * no room for them writes them first. Each is listed as unnamed, in case the events are refused.
   */
  blobs?: BlobRow[];
}

export interface EventStore {
  append(streamId: string, events: NewEvent[], options: AppendOptions): Promise<AppendResult>;
  readStream(streamId: string, options?: { fromRevision?: number }): Promise<StoredEvent[]>;
  /** Events in global order, never skipping one that commits late. */
  readAll(options?: ReadAllOptions): Promise<StoredEvent[]>;
  /** Catch-up from `from`, then live. `handle` gets batches in global order; a failing batch is retried. */
  subscribe(options: SubscribeOptions, handle: (events: StoredEvent[]) => Promise<void>): Subscription;
  /**
   * The position of the newest event that `readAll` could return now; with `committed`, of the newest event
   * committed, which readers may see a moment later (an older transaction still running holds it back).
   */
  headPosition(options?: { committed?: boolean }): Promise<Position>;
  close(): Promise<void>;
}

export function applyUpcasters(upcasters: Record<string, Upcaster>, event: StoredEvent): StoredEvent {
  let e = event;
  for (let i = 0; i < 10; i++) {
    const up = upcasters[e.type];
    if (!up) return e;
    e = up(e);
  }
  return e;
}
