import type { Database } from '../platform/db/database.ts';
import { isDatabaseUnavailable } from '../platform/db/unavailable.ts';
import { AppError } from '../platform/errors.ts';
import type { Position } from '../platform/eventstore/types.ts';
import { writesAhead } from '../platform/metrics.ts';
import type { AppendedEvent } from '../platform/services.ts';
import { CHECKPOINT_CHANNEL, type Projection } from './projection.ts';
import type { ProjectionRunner } from './runner.ts';

const unlessUnavailable = (error: unknown) => {
  if (!isDatabaseUnavailable(error)) throw error;
};

/** The runner of this process, as the waiter sees it; `wake` where it does not see this process's appends. */
type LocalRunner = Pick<ProjectionRunner, 'events'> & { wake?(position: Position): void };

/**
 * Read-your-writes: a mutating request waits until the projections serving its resource have reached the
 * position of its last event, so the GET that follows sees it. Checkpoints of this process's runner arrive in
 * memory, those of other processes by NOTIFY (its payload carries the checkpoint): neither costs a query. A
 * waiter polls the table itself only when nothing woke it for a while. Bounded: past the deadline the client
 * gets a 503 rather than a stale answer.
 */
export class ProjectionWaiter {
  readonly #db: Database;
  readonly #known = new Map<string, Position>();
  readonly #wakers = new Set<{ names: string[]; position: Position; wake: () => void }>();
  readonly #changeListeners = new Map<string, Set<() => void>>();
  readonly #timeoutMs: number;
  #unlisten?: Promise<() => Promise<void>>;
  /** Whether checkpoints of other processes are heard (LISTEN in place). */
  #hearing = false;
  /** With projections running in this process the first answer usually comes from memory. */
  readonly #localRunner: boolean;

  /** Has this process's runner read the log now rather than at the next NOTIFY (the runner's thread). */
  readonly #wakeRunner: (position: Position) => void;
  /** close() was called: waits still under way end at once, as at their deadline (the process is stopping). */
  #closed = false;
  /** The projections whose rows a write may write ahead of them (`writeAhead`), by name. */
  readonly #projections: Map<string, Projection>;

  constructor(
    db: Database,
    runner: LocalRunner | undefined,
    timeoutMs: number,
    projections: readonly Projection[] = [],
  ) {
    this.#db = db;
    this.#projections = new Map(projections.map((p) => [p.name, p]));
    this.#timeoutMs = timeoutMs;
    this.#localRunner = runner !== undefined;
    this.#wakeRunner = runner?.wake ? (position) => runner.wake!(position) : () => {};
    runner?.events.on('checkpoint', (name: string, position: Position) => this.#learn(name, position));
    runner?.events.on('changed', (name: string) => this.#changed(name));
  }

  /**
   * Writes what the named projections make of `events` (each the first of its stream) with their own
   * `writeAhead`, one after the other; false, writing nothing, when one of them has none.
   */
  async writeAhead(names: string[], events: AppendedEvent[]): Promise<boolean> {
    const writers = names.map((name) => this.#projections.get(name));
    if (!writers.every((p) => p?.writeAhead)) return false;
    for (const p of writers) {
      await p!.writeAhead!(this.#db, events);
      writesAhead.inc({ projection: p!.name });
    }
    return true;
  }

  /**
   * Calls `listener` whenever the projection's read model may have changed: at once when this process applied
   * the events, by NOTIFY when another did. Read-model caches clear themselves on it.
   */
  onChange(name: string, listener: () => void): void {
    const listeners = this.#changeListeners.get(name) ?? new Set();
    listeners.add(listener);
    this.#changeListeners.set(name, listeners);
    void this.#listen().catch(() => {});
  }

  #changed(name: string) {
    for (const listener of this.#changeListeners.get(name) ?? []) listener();
  }

  /**
   * Whether another process's change reaches `onChange` listeners now. False until LISTEN is in place and while
   * its connection is lost: read-model caches then answer nothing from memory.
   */
  get hearing(): boolean {
    return this.#hearing;
  }

  #listen() {
    this.#unlisten ??= this.#db.listen(
      CHECKPOINT_CHANNEL,
      (payload) => {
        const [name, position, changed] = payload.split(' ');
        if (changed === 'changed') this.#changed(name);
        if (name && position) this.#learn(name, position);
      },
      {
        onLost: () => {
          this.#hearing = false;
        },
        // Whatever changed while deaf went unannounced: every read model may have changed, and the requests
        // waiting for other processes' checkpoints read them now.
        onResume: () => {
          this.#hearing = true;
          for (const name of this.#changeListeners.keys()) this.#changed(name);
          const waited = new Set([...this.#wakers].flatMap((w) => w.names));
          if (waited.size > 0) this.#refresh([...waited]).catch(() => {});
        },
      },
    );
    return this.#unlisten;
  }

  #learn(name: string, position: Position) {
    if ((this.#known.get(name) ?? '') < position) this.#known.set(name, position);
    // Only the waiters this answers: every projection reports after every batch, and there may be many waiting.
    let behind: Position | undefined;
    for (const w of this.#wakers) {
      if (!w.names.includes(name)) continue;
      if (this.#reached(w.names, w.position)) w.wake();
      else if (position < w.position && (behind === undefined || w.position > behind)) behind = w.position;
    }
    // The batch was read before some waiters' writes committed: read again now. (A waiter this checkpoint passed
    // waits for other projections of the same batch.)
    if (behind !== undefined) this.#wakeRunner(behind);
  }

  async #refresh(names: string[]) {
    const { rows } = await this.#db.query<{ name: string; position: string }>(
      `SELECT name, position FROM projection_checkpoints WHERE name IN (${names.map((_, i) => `$${i + 1}`).join(',')})`,
      names,
    );
    for (const r of rows) this.#learn(r.name, r.position);
  }

  #reached = (names: string[], position: Position) =>
    names.every((n) => (this.#known.get(n) ?? '') >= position);

  async waitFor(names: string[], position: Position | undefined): Promise<void> {
    if (!position || names.length === 0 || this.#reached(names, position)) return;
    if (!this.#closed) await this.#listen();
    const deadline = Date.now() + this.#timeoutMs;
    // This process's runner reports in memory: a poll is only a fallback when it stands by for another process.
    let pollMs = this.#localRunner ? 50 : 5;
    let poll = !this.#localRunner;
    while (true) {
      // The database away is no answer: the write is saved, so the request waits on and at worst times out
      // (its 503 says the write was saved), rather than failing as if it had not been.
      if (poll && !this.#closed) await this.#refresh(names).catch(unlessUnavailable);
      if (this.#reached(names, position)) return;
      const left = deadline - Date.now();
      if (left <= 0 || this.#closed) {
        throw new AppError(
          'projection_timeout',
          'The change was saved but is not readable yet; retry the read shortly.',
          { 'Retry-After': '1' },
        );
      }
      this.#wakeRunner(position);
      poll = await new Promise<boolean>((resolve) => {
        const waiter = { names, position, wake: () => done(false) };
        const done = (timedOut: boolean) => {
          clearTimeout(timer);
          this.#wakers.delete(waiter);
          resolve(timedOut);
        };
        const timer = setTimeout(() => done(true), Math.min(pollMs, left));
        this.#wakers.add(waiter);
      });
      pollMs = Math.min(pollMs * 2, 200);
    }
  }

  /**
   * Stops listening, and ends the waits still under way with their time-out's answer rather than have them poll a
   * closed database until their deadline (which would hold the process that long).
   */
  async close() {
    this.#closed = true;
    for (const w of this.#wakers) w.wake();
    if (this.#unlisten) await (await this.#unlisten)();
  }
}
