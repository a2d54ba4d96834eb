import { createHash } from 'node:crypto';
import { AppError } from '../errors.ts';
import type { EventStore, StoredEvent } from '../eventstore/types.ts';
import { WrongExpectedRevisionError } from '../eventstore/types.ts';
import type { AuthContext } from './auth-context.ts';

export interface StoredReply {
  status: number;
  body: unknown;
}

export const IDEMPOTENCY_WINDOW_MS = 24 * 3600_000;
/** A claim whose request never finished (crashed process) stops blocking the key after this long. */
const IN_FLIGHT_LEASE_MS = 60_000;

type State =
  | { kind: 'none' }
  | { kind: 'in_flight' | 'completed'; hash: string; at: number; reply?: StoredReply }
  | { kind: 'released' };

function evolve(_: State, e: StoredEvent): State {
  switch (e.type) {
    case 'IdempotencyKeyClaimed':
      return { kind: 'in_flight', hash: e.data.requestHash, at: Date.parse(e.data.claimedAt) };
    case 'IdempotentRequestCompleted':
      return {
        kind: 'completed',
        hash: e.data.requestHash,
        at: Date.parse(e.data.claimedAt),
        reply: e.data.reply,
      };
    case 'IdempotencyKeyReleased':
      return { kind: 'released' };
    default:
      return _;
  }
}

export function requestHash(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n${JSON.stringify(body ?? null)}`)
    .digest('hex');
}

/**
 * The Idempotency-Key middleware, kept in the event store so it holds across processes: the first request
 * claims the stream `idempotency-<org>-<mode>-<key hash>` with "no stream", and its reply is appended when it
 * finishes. The same key with the same body within 24 hours replays that reply without acting again; with
 * another body it is a 409, as is a duplicate that arrives while the first is still in flight.
 */
export async function withIdempotency(
  store: EventStore,
  auth: AuthContext,
  key: string,
  hash: string,
  now: () => Date,
  run: () => Promise<StoredReply>,
): Promise<StoredReply & { replayed?: boolean }> {
  if (!/^[\x21-\x7e]{1,255}$/.test(key)) {
    throw new AppError('invalid_header', 'Idempotency-Key must be 1 to 255 printable ASCII characters');
  }
  const stream = `idempotency-${auth.orgId}-${auth.mode}-${createHash('sha256').update(key).digest('hex').slice(0, 40)}`;
  const metadata = { orgId: auth.orgId, mode: auth.mode, actor: auth.keyId };
  for (let attempt = 0; ; attempt++) {
    const history = await store.readStream(stream);
    const state = history.reduce(evolve, { kind: 'none' } as State);
    const t = now().getTime();
    if (state.kind === 'completed' && t - state.at < IDEMPOTENCY_WINDOW_MS) {
      if (state.hash !== hash) throw reused();
      return { ...state.reply!, replayed: true };
    }
    if (state.kind === 'in_flight' && t - state.at < IN_FLIGHT_LEASE_MS) {
      if (state.hash !== hash) throw reused();
      throw new AppError(
        'idempotency_request_in_flight',
        'A request with this Idempotency-Key is still being processed; retry shortly.',
      );
    }
    const claimedAt = now().toISOString();
    let revision: number;
    try {
      const last = history.at(-1);
      revision = (
        await store.append(
          stream,
          [{ type: 'IdempotencyKeyClaimed', data: { requestHash: hash, claimedAt }, metadata }],
          {
            expectedRevision: last ? last.revision : 'no_stream',
          },
        )
      ).nextRevision;
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError && attempt < 2) continue;
      throw error;
    }
    let reply: StoredReply;
    try {
      reply = await run();
    } catch (error) {
      if (error instanceof AppError && error.status < 500 && error.status !== 429) {
        reply = { status: error.status, body: error.toJSON() };
      } else {
        // Not a final answer (server trouble, rate limit): free the key so the client can retry.
        await store.append(stream, [{ type: 'IdempotencyKeyReleased', data: {}, metadata }], {
          expectedRevision: revision,
        });
        throw error;
      }
    }
    await store.append(
      stream,
      [{ type: 'IdempotentRequestCompleted', data: { requestHash: hash, claimedAt, reply }, metadata }],
      {
        expectedRevision: revision,
      },
    );
    return reply;
  }
}

const reused = () =>
  new AppError(
    'idempotency_key_reused',
    'This Idempotency-Key was already used with a different request body.',
  );
