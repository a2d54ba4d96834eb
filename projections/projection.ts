import type { Queryable, Transaction } from '../platform/db/database.ts';
import type { Stored, TypedEvent } from '../platform/eventstore/types.ts';
import type { AppendedEvent } from '../platform/services.ts';

/**
 * A projector: turns events into rows of the tables it owns. Handlers must be idempotent upserts, because a
 * crash between a batch's writes and its checkpoint cannot happen (same transaction) but a rebuild replays all.
 * SQL must name its tables unqualified: a rebuild points `search_path` at fresh copies of them.
 */
export interface Projection<E extends TypedEvent = TypedEvent> {
  name: string;
  /** The tables this projection alone writes; a rebuild creates fresh copies of exactly these. */
  tables: string[];
  /**
   * The event types it applies: the runner hands it no other, and other events only move its checkpoint, without
   * a transaction of their own. Omitted: every event.
   */
  types?: readonly E['type'][];
  apply(tx: Transaction, event: Stored<E>): Promise<void>;
  /**
   * Optional: applies a batch in fewer statements than one `apply` per event (e.g. many inserts in one), with
   * the same result as applying the events in order. Projections on the send path have one.
   */
  applyBatch?(tx: Transaction, events: Stored<E>[]): Promise<void>;
  /**
   * Optional: writes the rows of events that begin their streams before the runner gets to them, for a write whose
   * answer should not wait behind the log (`ReadYourWrites.writeAhead`). Applying them later must then find those
   * rows in and leave them as they are, so that a rebuild gives the same rows.
   */
  writeAhead?(db: Queryable, events: AppendedEvent[]): Promise<void>;
}

export const CHECKPOINT_CHANNEL = 'postline_checkpoints';

/** A stable advisory-lock key for a projection name. */
export function lockKey(name: string): number {
  let h = 0;
  for (const ch of `projection:${name}`) h = (Math.imul(h, 31) + ch.charCodeAt(0)) | 0;
  return h;
}
