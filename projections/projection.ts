import type { Transaction } from '../platform/db/database.ts';
import { checkpointTableSql } from '../platform/eventstore/checkpoints.ts';
import type { StoredEvent } from '../platform/eventstore/types.ts';

/**
 * A projector: turns events into rows of the tables it owns. Handlers must be idempotent upserts, because a
 * crash between a batch's writes and its checkpoint cannot happen (same transaction) but a rebuild replays all.
 * SQL must name its tables unqualified: a rebuild points `search_path` at fresh copies of them.
 */
export interface Projection {
  name: string;
  /** The tables this projection alone writes; a rebuild creates fresh copies of exactly these. */
  tables: string[];
  /**
   * The event types it applies; other events only move its checkpoint, without a transaction of their own.
   * Omitted: every event. test/unit/projection-types.test.ts checks that no other type makes it write.
   */
  types?: readonly string[];
  apply(tx: Transaction, event: StoredEvent): Promise<void>;
  /**
   * Optional: applies a batch in fewer statements than one `apply` per event (e.g. many inserts in one), with
   * the same result as applying the events in order. Projections on the send path have one.
   */
  applyBatch?(tx: Transaction, events: StoredEvent[]): Promise<void>;
}

export const CHECKPOINTS_SCHEMA = checkpointTableSql('projection_checkpoints');

export const CHECKPOINT_CHANNEL = 'postline_checkpoints';

/** A stable advisory-lock key for a projection name. */
export function lockKey(name: string): number {
  let h = 0;
  for (const ch of `projection:${name}`) h = (Math.imul(h, 31) + ch.charCodeAt(0)) | 0;
  return h;
}
