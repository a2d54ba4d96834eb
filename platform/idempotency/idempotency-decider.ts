import { AppError } from '../errors.ts';
import type { Decider } from '../eventstore/command.ts';
import type { IdempotencyEvent, StoredReply } from './idempotency-events.ts';

export type IdempotencyState =
  | { kind: 'none' }
  | { kind: 'in_flight' | 'released'; hash: string; at: number; ids?: string[]; attempt?: string }
  | { kind: 'completed'; hash: string; at: number; reply: StoredReply };

export type IdempotencyCommand =
  | {
      type: 'Claim';
      hash: string;
      /** The body's hash as claims of earlier versions were made (idempotency.ts `requestHash`). */
      legacyHash?: string;
      at: string;
      /** Ids for a first claim; a key claimed before keeps its own. */
      ids: string[];
      /** This attempt's own id, which its release names. */
      attempt: string;
      leaseMs: number;
      windowMs: number;
    }
  | { type: 'Complete'; hash: string; reply: StoredReply }
  /** The attempt `attempt` ended without a final answer. */
  | { type: 'Release'; attempt: string };

const reused = () =>
  new AppError(
    'idempotency_key_reused',
    'This Idempotency-Key was already used with a different request body.',
  );

/**
 * A key is bound to its first body for the window. Within it a completed request is replayed (Claim decides
 * nothing), a claim younger than the lease is a 409, and a request that never finished (past the lease, or
 * released after a server error) is claimed again on the ids of its first claim: what it committed stays
 * found under them, so nothing is created twice. A release frees only the claim of the attempt it names: one
 * written late (the database was away) never frees a later attempt that is running.
 */
export const idempotencyDecider: Decider<IdempotencyCommand, IdempotencyEvent, IdempotencyState> = {
  initialState: { kind: 'none' },
  evolve(state, event) {
    switch (event.type) {
      case 'IdempotencyKeyClaimed':
        return {
          kind: 'in_flight',
          hash: event.data.requestHash,
          at: Date.parse(event.data.claimedAt),
          ids: event.data.ids,
          attempt: event.data.attempt,
        };
      case 'IdempotentRequestCompleted':
        return {
          kind: 'completed',
          hash: event.data.requestHash,
          at: Date.parse(event.data.claimedAt),
          reply: event.data.reply,
        };
      case 'IdempotencyKeyReleased':
        return state.kind === 'in_flight' ? { ...state, kind: 'released' } : state;
      default:
        return state;
    }
  },
  decide(command, state) {
    switch (command.type) {
      case 'Claim': {
        const t = Date.parse(command.at);
        const data = {
          requestHash: command.hash,
          claimedAt: command.at,
          ids: command.ids,
          attempt: command.attempt,
        };
        if (state.kind === 'none' || t - state.at >= command.windowMs) {
          return [{ type: 'IdempotencyKeyClaimed', data }];
        }
        if (state.hash !== command.hash && state.hash !== command.legacyHash) throw reused();
        if (state.kind === 'completed') return [];
        if (state.kind === 'in_flight' && t - state.at < command.leaseMs) {
          throw new AppError(
            'idempotency_request_in_flight',
            'A request with this Idempotency-Key is still being processed; retry shortly.',
          );
        }
        return [
          {
            type: 'IdempotencyKeyClaimed',
            data: { ...data, ids: state.ids ?? command.ids, resumed: state.ids !== undefined },
          },
        ];
      }
      case 'Complete': {
        if (state.kind === 'none' || state.kind === 'completed') return [];
        const claimedAt = new Date(state.at).toISOString();
        return [
          {
            type: 'IdempotentRequestCompleted',
            data: { requestHash: command.hash, claimedAt, reply: command.reply },
          },
        ];
      }
      case 'Release':
        return state.kind === 'in_flight' && state.attempt === command.attempt
          ? [{ type: 'IdempotencyKeyReleased', data: { attempt: command.attempt } }]
          : [];
    }
  },
};
