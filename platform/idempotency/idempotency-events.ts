import { createHash } from 'node:crypto';
import type { Mode } from '../eventstore/types.ts';

/** A reply as the client got it, replayed to every later request with the same key and body. */
export interface StoredReply {
  status: number;
  body: unknown;
}

/**
 * The Idempotency-Key's events, stream `idempotency-<org>-<mode>-<key hash>`. Versioned by adding fields only.
 */
export type IdempotencyKeyClaimed = {
  type: 'IdempotencyKeyClaimed';
  data: {
    requestHash: string;
    claimedAt: string;
    /**
     * The ids of what the request creates, chosen before it runs; every later claim of the key keeps them, so a
     * retry finds what an earlier attempt committed instead of creating it again. Absent in claims written
     * before ids were recorded.
     */
    ids?: string[];
    /** A later claim of a request that never finished: what its ids name may exist already. */
    resumed?: boolean;
    /**
     * The attempt that claimed the key (random): only that attempt releases it, so a release written late never
     * frees a later attempt's claim. Absent in claims written before attempts were recorded.
     */
    attempt?: string;
  };
};
export type IdempotentRequestCompleted = {
  type: 'IdempotentRequestCompleted';
  data: { requestHash: string; claimedAt: string; reply: StoredReply };
};
/** The request ended without a final answer (server error, time-out); the next retry runs it on the same ids. */
export type IdempotencyKeyReleased = {
  type: 'IdempotencyKeyReleased';
  /** The attempt that ended; absent in releases written before attempts were recorded. */
  data: { attempt?: string };
};

export type IdempotencyEvent = IdempotencyKeyClaimed | IdempotentRequestCompleted | IdempotencyKeyReleased;

export const idempotencyStream = (orgId: string, mode: Mode, key: string) =>
  `idempotency-${orgId}-${mode}-${createHash('sha256').update(key).digest('hex').slice(0, 40)}`;
