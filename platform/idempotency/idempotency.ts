import { createHash, randomUUID } from 'node:crypto';
import type { AuthContext } from '../auth/auth-context.ts';
import { AppError } from '../errors.ts';
import { type CommandResult, handleCommand } from '../eventstore/command.ts';
import type { EventStore, Stored, StoredEvent } from '../eventstore/types.ts';
import { type IdempotencyState, idempotencyDecider } from './idempotency-decider.ts';
import { type IdempotencyEvent, idempotencyStream, type StoredReply } from './idempotency-events.ts';
import { OwedReleases } from './idempotency-releases.ts';

export type { StoredReply } from './idempotency-events.ts';

export const IDEMPOTENCY_WINDOW_MS = 24 * 3600_000;
/** A claim whose request never finished (crashed process) stops blocking its retries after this long. */
export const IN_FLIGHT_LEASE_MS = 60_000;

/** What a request runs on under its key: the ids it creates, and whether an earlier attempt may have. */
export interface IdempotentRun {
  ids: string[];
  /** An earlier attempt with these ids never finished: it may have committed some of what they name. */
  resumed: boolean;
}

/**
 * An idempotency key: 1 to 255 printable ASCII characters, the space included (as docs/api.md says, and as
 * Stripe takes them). The key is hashed into its stream's name, so any of them is safe.
 */
export const isIdempotencyKey = (key: string) => /^[\x20-\x7e]{1,255}$/.test(key);

/** A body as its meaning goes: JSON objects are unordered, so their keys are sorted, at every depth. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value === null || typeof value !== 'object') return value;
  const object = value as Record<string, unknown>;
  return Object.fromEntries(
    Object.keys(object)
      .sort()
      .map((k) => [k, canonical(object[k])]),
  );
}

/**
 * A request's identity under its key: its method, path and body, whatever the order of the body's keys (a client
 * that serialises its retry anew is the same request). `legacy` hashes the body as written, as keys claimed by
 * versions before canonical bodies were: a retry of such a claim still matches it.
 */
export interface RequestHash {
  hash: string;
  legacy: string;
}

export function requestHash(method: string, path: string, body: unknown): RequestHash {
  const of = (b: unknown) =>
    createHash('sha256')
      .update(`${method} ${path}\n${JSON.stringify(b ?? null)}`)
      .digest('hex');
  return { hash: of(canonical(body)), legacy: of(body) };
}

/**
 * The Idempotency-Key middleware, kept in the event store so it holds across processes: the first request
 * claims the stream with the ids of what it will create, and its reply is appended when it finishes. The same
 * key with the same body within 24 hours replays that reply without acting again; with another body it is a
 * 409, as is a duplicate that arrives while the first is still in flight. A request that ended without a
 * final answer (a server error, a time-out after its write, a crash) is run again on the same ids, and
 * `run` answers from what they name where it exists: a retry never creates a second email. Such an attempt
 * releases the key at once; when the release cannot be written (the database is away), it is owed and written
 * as soon as the database answers again (`OwedReleases`), so a retry is not kept waiting for the lease.
 */
export class IdempotencyKeys {
  readonly #store: EventStore;
  /** The releases this process owes its store. */
  readonly #owed = new OwedReleases();

  /** One per process (`services.idempotency`, built in bin/service.ts), shared by the API and the SMTP relay. */
  constructor(store: EventStore) {
    this.#store = store;
  }

  async run(
    auth: AuthContext,
    key: string,
    hash: RequestHash,
    now: () => Date,
    run: (claim: IdempotentRun) => Promise<StoredReply>,
    options: { leaseMs?: number; newIds?: () => string[] } = {},
  ): Promise<StoredReply & { replayed?: boolean }> {
    const store = this.#store;
    const owed = this.#owed;
    // Over HTTP a space cannot begin or end it: HTTP trims field values.
    if (!isIdempotencyKey(key)) {
      throw new AppError(
        'invalid_header',
        'Idempotency-Key must be 1 to 255 printable ASCII characters (letters, digits, punctuation, spaces).',
      );
    }
    const stream = idempotencyStream(auth.orgId, auth.mode, key);
    const metadata = { orgId: auth.orgId, mode: auth.mode, actor: auth.keyId };
    const leaseMs = options.leaseMs ?? IN_FLIGHT_LEASE_MS;
    // An earlier attempt of this process that could not release the key does so first.
    await owed.settle(stream);
    const attempt = randomUUID();
    const release = (history?: Stored<IdempotencyEvent>[]) =>
      handleCommand(store, stream, idempotencyDecider, { type: 'Release', attempt }, metadata, {
        history,
        retries: 2,
      });
    const owe = () => owed.owe(stream, () => release(), Date.now() + leaseMs);
    let claim: CommandResult<IdempotencyEvent, IdempotencyState>;
    try {
      claim = await handleCommand(
        store,
        stream,
        idempotencyDecider,
        {
          type: 'Claim',
          hash: hash.hash,
          legacyHash: hash.legacy,
          at: now().toISOString(),
          ids: options.newIds?.() ?? [],
          attempt,
          leaseMs,
          windowMs: IDEMPOTENCY_WINDOW_MS,
        },
        metadata,
        { retries: 2 },
      );
    } catch (error) {
      // The claim may have been written although its answer was lost: released, if so, once it can be.
      if (!(error instanceof AppError)) owe();
      throw error;
    }
    const claimed = claim.events[0];
    if (claimed?.type !== 'IdempotencyKeyClaimed') {
      return { ...(claim.state as Extract<IdempotencyState, { kind: 'completed' }>).reply, replayed: true };
    }
    // The stream as it is after the claim, so that finishing it costs no read unless someone appended meanwhile.
    const history = [justAppended(stream, claim, claimed, metadata)];
    let reply: StoredReply;
    try {
      reply = await run({ ids: claimed.data.ids ?? [], resumed: claimed.data.resumed === true });
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500 || error.status === 429) {
        // Not a final answer (server trouble, a time-out after the write, a quota): the next retry runs again on
        // the same ids, at once.
        await release(history).catch(owe);
        throw error;
      }
      reply = { status: error.status, body: error.toJSON() };
    }
    try {
      await handleCommand(
        store,
        stream,
        idempotencyDecider,
        { type: 'Complete', hash: hash.hash, reply },
        metadata,
        {
          history,
          retries: 2,
        },
      );
    } catch (error) {
      // The answer is lost with the database: a retry runs again on the same ids and finds what this one did.
      owe();
      throw error;
    }
    return reply;
  }
}

function justAppended(
  streamId: string,
  result: CommandResult<IdempotencyEvent, IdempotencyState>,
  event: IdempotencyEvent,
  metadata: StoredEvent['metadata'],
): Stored<IdempotencyEvent> {
  return {
    ...event,
    metadata,
    streamId,
    revision: result.revision,
    position: result.position!,
    createdAt: new Date(),
  };
}
