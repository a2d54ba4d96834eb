import type { BlobRow, EventMetadata, EventStore, Position, StoredEvent } from './types.ts';
import { WrongExpectedRevisionError } from './types.ts';

/** An event as a decider sees it: no metadata, no positions. */
export interface DomainEvent<T extends string = string, D = unknown> {
  type: T;
  data: D;
}

/**
 * A command union without the fields a command handler fills in itself (ids, caller, time), each member on its
 * own: what a handler's callers give.
 */
export type Without<C, K extends PropertyKey> = C extends unknown ? Omit<C, K> : never;

/** A pure aggregate: state from events, events from a command. No I/O, no clock, no randomness. */
export interface Decider<C, E extends DomainEvent, S> {
  initialState: S;
  evolve(state: S, event: E): S;
  /** Returns the new events, or throws an AppError when a rule says no. */
  decide(command: C, state: S): E[];
}

/**
 * The state after `events`, read from the decider's own stream: a stream holds only its aggregate's events, so
 * each is taken to be of the union `E`.
 */
export const rebuildState = <E extends DomainEvent, S>(
  decider: Pick<Decider<unknown, E, S>, 'initialState' | 'evolve'>,
  events: readonly DomainEvent[],
) => events.reduce((s, e) => decider.evolve(s, e as E), decider.initialState);

/**
 * The decider that decides `commands` one after the other, each on the state the events before it left: their
 * events together, appended at once.
 */
export const inSequence = <C, E extends DomainEvent, S>(decider: Decider<C, E, S>): Decider<C[], E, S> => ({
  initialState: decider.initialState,
  evolve: decider.evolve,
  decide(commands, state) {
    const events: E[] = [];
    for (const command of commands) {
      const decided = decider.decide(command, state);
      state = decided.reduce(decider.evolve, state);
      events.push(...decided);
    }
    return events;
  },
});

export interface CommandResult<E, S> {
  /** The events this command appended (empty when the decider decided nothing needed doing). */
  events: E[];
  /** State after the new events. */
  state: S;
  /** Global position of the last appended event, for read-your-writes. Undefined when nothing was appended. */
  position?: Position;
  revision: number;
}

/**
 * Read the stream, decide, append with the revision that was read. A concurrent writer makes the append fail;
 * then the command is decided again on the fresh state, so races resolve by the business rules (e.g. cancel
 * versus the scheduler: whoever appends second sees the first one's events and gets its conflict error).
 * `command` may be a function of the state, for a command whose inputs depend on it (what to look up first);
 * it is called again on each attempt. `blobs`: rows the events name, written with them (EventStore.append).
 */
export async function handleCommand<C, E extends DomainEvent, S>(
  store: EventStore,
  streamId: string,
  decider: Decider<C, E, S>,
  command: C | ((state: S) => C | Promise<C>),
  metadata: EventMetadata,
  options: { retries?: number; history?: StoredEvent[]; blobs?: BlobRow[] } = {},
): Promise<CommandResult<E, S>> {
  const retries = options.retries ?? 3;
  for (let attempt = 0; ; attempt++) {
    const history = attempt === 0 && options.history ? options.history : await store.readStream(streamId);
    const state = rebuildState(decider, history);
    const events = decider.decide(
      typeof command === 'function' ? await (command as (state: S) => C | Promise<C>)(state) : command,
      state,
    );
    const revision = history.length ? history[history.length - 1].revision : -1;
    if (events.length === 0) return { events, state, revision };
    try {
      const result = await store.append(
        streamId,
        events.map((e) => ({ type: e.type, data: e.data, metadata })),
        { expectedRevision: revision < 0 ? 'no_stream' : revision, blobs: options.blobs },
      );
      const next = events.reduce(decider.evolve, state);
      return { events, state: next, position: result.position, revision: result.nextRevision };
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError) || attempt >= retries) throw error;
    }
  }
}

/** The fields of a command that names the caller's organization and mode and the time it is decided at. */
interface TenantCommand {
  orgId: string;
  mode: EventMetadata['mode'];
  at: string;
}

/**
 * A runner of an aggregate's commands whose caller is an organization and mode: it fills in the aggregate's id (the
 * command's `idField`), the caller from the event metadata, and the clock's time, so each command handler gives only
 * what is its own. Another organization's aggregate, or the other mode's, is the decider's to refuse (404).
 */
export function tenantCommands<C extends TenantCommand, E extends DomainEvent, S, K extends keyof C & string>(
  stream: (id: string) => string,
  decider: Decider<C, E, S>,
  idField: K,
) {
  return (
    services: { store: EventStore; clock: { now(): Date } },
    meta: EventMetadata,
    id: string,
    command: Without<C, K | keyof TenantCommand>,
  ) =>
    handleCommand(
      services.store,
      stream(id),
      decider,
      {
        ...command,
        [idField]: id,
        orgId: meta.orgId,
        mode: meta.mode,
        at: services.clock.now().toISOString(),
      } as unknown as C,
      meta,
    );
}
