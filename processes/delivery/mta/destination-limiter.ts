/**
 * Connection reuse and a concurrency cap per destination (MX host:port, or the smarthost).
 *
 * A destination holds at most `max` open connections, busy or idle. `acquire` hands out an idle connection when
 * there is one, opens a new one while under the cap, and otherwise waits for a release. Idle connections are
 * closed after `idleMs`, or as soon as the server drops them. A use may bring limits of its own (its shaping
 * group's): a lower cap of connections for its destination, and a number of uses after which a connection closes.
 */
export interface Reusable {
  readonly usable: boolean;
  close(): void;
}

/** Limits of one use, from the destination's shaping group; absent, the pool's own cap and no use limit. */
export interface UseLimits {
  /** Connections open to the destination at most (busy or idle). */
  connections?: number;
  /** A connection closes (QUIT) after this many uses: messages per connection. */
  usesPerConnection?: number;
}

interface Destination<T extends Reusable> {
  open: number;
  idle: { session: T; timer: NodeJS.Timeout }[];
  waiting: (() => void)[];
}

export class DestinationPool<T extends Reusable> {
  private readonly destinations = new Map<string, Destination<T>>();
  private readonly max: number;
  private readonly idleMs: number;
  /** How many uses each open connection has served. */
  private readonly uses = new WeakMap<T, number>();
  private closed = false;

  constructor(options: { maxPerDestination: number; idleMs: number }) {
    this.max = Math.max(1, options.maxPerDestination);
    this.idleMs = options.idleMs;
  }

  /**
   * Runs `work` with a connection to `key`, opened by `open` when none is idle. `work` returns whether the
   * connection may be reused. A connection that `open` fails to create frees its slot at once.
   */
  async use<R>(
    key: string,
    open: () => Promise<T>,
    work: (session: T) => Promise<{ value: R; reuse: boolean }>,
    limits: UseLimits = {},
  ): Promise<R> {
    const session = await this.acquire(key, open, Math.max(1, limits.connections ?? this.max));
    let reuse = false;
    try {
      const outcome = await work(session);
      reuse = outcome.reuse;
      return outcome.value;
    } finally {
      const used = (this.uses.get(session) ?? 0) + 1;
      this.uses.set(session, used);
      this.release(key, session, reuse && used < (limits.usesPerConnection ?? Number.POSITIVE_INFINITY));
    }
  }

  private destination(key: string): Destination<T> {
    let d = this.destinations.get(key);
    if (!d) {
      d = { open: 0, idle: [], waiting: [] };
      this.destinations.set(key, d);
    }
    return d;
  }

  private async acquire(key: string, open: () => Promise<T>, max: number): Promise<T> {
    for (;;) {
      if (this.closed) throw new Error('the MTA is closed');
      // Looked up on every turn: an emptied destination is dropped from the map while we wait.
      const d = this.destination(key);
      const idle = d.idle.pop();
      if (idle) {
        clearTimeout(idle.timer);
        if (idle.session.usable) return idle.session;
        this.retire(key, idle.session);
        continue;
      }
      if (d.open < max) {
        d.open++;
        try {
          return await open();
        } catch (err) {
          d.open--;
          this.wakeOne(d);
          throw err;
        }
      }
      await new Promise<void>((resolve) => d.waiting.push(resolve));
    }
  }

  private release(key: string, session: T, reuse: boolean): void {
    const d = this.destination(key);
    if (!reuse || !session.usable || this.closed) {
      this.retire(key, session);
      return;
    }
    const entry = {
      session,
      timer: setTimeout(() => {
        d.idle = d.idle.filter((i) => i !== entry);
        this.retire(key, session);
      }, this.idleMs),
    };
    entry.timer.unref();
    d.idle.push(entry);
    this.wakeOne(d);
  }

  private retire(key: string, session: T): void {
    session.close();
    const d = this.destination(key);
    d.open--;
    this.wakeOne(d);
    if (d.open === 0 && d.waiting.length === 0) this.destinations.delete(key);
  }

  private wakeOne(d: Destination<T>): void {
    d.waiting.shift()?.();
  }

  /**
   * Closes the idle connections of the destinations `match` names (another destination of their shaping group
   * waits for the connection slots they hold); answers how many it closed.
   */
  closeIdle(match: (key: string) => boolean): number {
    let closed = 0;
    for (const [key, d] of [...this.destinations]) {
      if (!match(key)) continue;
      for (const { session, timer } of d.idle.splice(0)) {
        clearTimeout(timer);
        this.retire(key, session);
        closed++;
      }
    }
    return closed;
  }

  /** Closes idle connections and refuses new work; busy connections close when their work ends. */
  close(): void {
    this.closed = true;
    for (const [key, d] of this.destinations) {
      for (const { session, timer } of d.idle.splice(0)) {
        clearTimeout(timer);
        this.retire(key, session);
      }
      for (const wake of d.waiting.splice(0)) wake();
    }
  }
}
