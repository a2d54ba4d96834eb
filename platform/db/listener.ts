import pg from 'pg';

/** What a subscriber to a channel is told: each notification, and when it may have missed some. */
export interface ChannelHandlers {
  onNotify(payload: string): void;
  /** The LISTEN connection is gone: notifications are missed until `onResume`. */
  onLost?(): void;
  /**
   * LISTEN is in place: first once the subscription's own is, then again each time after it was lost. Whatever
   * was announced before was not heard, so the subscriber reads again what it follows and drops what it cached.
   */
  onResume?(): void;
}

/** Back-off between attempts to connect again: doubling from the first, up to the last, with ±20 % jitter. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 5000;
/**
 * A connection that goes quiet (its server gone without closing it: a failover, a cut network) is noticed by a
 * round trip this often that must come back within the time-out; TCP keep-alive alone takes minutes.
 */
const HEARTBEAT_MS = 30_000;
const HEARTBEAT_TIMEOUT_MS = 10_000;

/**
 * The one LISTEN connection of a pool's database, shared by every channel. A connection that is lost (a
 * terminated backend, a restarted server) is made again with back-off, LISTENs again on every channel, and then
 * tells each subscriber that missed notifications (`onResume`): nothing announced while deaf stays unheard.
 */
export class PgListener {
  readonly #config: pg.ClientConfig;
  readonly #subscribers = new Map<string, Set<ChannelHandlers>>();
  /** Subscribers that may have missed notifications: told `onResume` once LISTEN is in place again. */
  readonly #deaf = new Set<ChannelHandlers>();
  #client?: pg.Client;
  #connecting?: Promise<void>;
  #retry?: NodeJS.Timeout;
  #heartbeat?: NodeJS.Timeout;
  #failures = 0;
  #closed = false;

  constructor(config: pg.ClientConfig) {
    this.#config = config;
  }

  /** Whether LISTEN is in place now (notifications are heard). */
  get listening(): boolean {
    return this.#client !== undefined && this.#connecting === undefined;
  }

  /**
   * Subscribes to `channel`. Resolves once LISTEN is in place (`onResume` was called), or once the first attempt
   * failed: the listener then tries again with back-off and calls `onResume` when it succeeds. Returns the
   * function that unsubscribes.
   */
  async add(channel: string, handlers: ChannelHandlers): Promise<() => Promise<void>> {
    if (this.#closed) throw new Error('The database was closed.');
    const subscribers = this.#subscribers.get(channel) ?? new Set();
    const isNew = subscribers.size === 0;
    subscribers.add(handlers);
    this.#subscribers.set(channel, subscribers);
    const remove = async () => this.#remove(channel, handlers);
    if (this.listening) {
      try {
        if (isNew) await this.#client!.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
      } catch {
        // A lost connection: its handler marks every subscriber deaf and connects again.
        this.#deaf.add(handlers);
        return remove;
      }
      if (!this.#deaf.has(handlers)) handlers.onResume?.();
      return remove;
    }
    this.#deaf.add(handlers);
    await (this.#connecting ?? this.#connect());
    return remove;
  }

  async #remove(channel: string, handlers: ChannelHandlers) {
    const subscribers = this.#subscribers.get(channel);
    this.#deaf.delete(handlers);
    if (!subscribers?.delete(handlers) || subscribers.size > 0) return;
    this.#subscribers.delete(channel);
    if (this.listening) await this.#client!.query(`UNLISTEN ${pg.escapeIdentifier(channel)}`).catch(() => {});
  }

  /** One attempt: connect, LISTEN on every channel, tell the deaf subscribers. A failure schedules the next. */
  #connect(): Promise<void> {
    clearTimeout(this.#retry);
    this.#retry = undefined;
    const client = new pg.Client({ ...this.#config, keepAlive: true });
    this.#client = client;
    // Without a listener, an 'error' event of the connection (a terminated backend) ends the process.
    client.on('error', () => this.#lost(client));
    client.on('end', () => this.#lost(client));
    client.on('notification', (n) => {
      for (const s of this.#subscribers.get(n.channel) ?? []) s.onNotify(n.payload ?? '');
    });
    this.#connecting = (async () => {
      try {
        await client.connect();
        // Channels added while this ran are listened to as well before the connection counts as in place.
        const listened = new Set<string>();
        for (;;) {
          const channels = [...this.#subscribers.keys()].filter((c) => !listened.has(c));
          if (channels.length === 0) break;
          await client.query(channels.map((c) => `LISTEN ${pg.escapeIdentifier(c)}`).join(';'));
          for (const c of channels) listened.add(c);
        }
      } catch {
        this.#lost(client);
        return;
      } finally {
        if (this.#client === client) this.#connecting = undefined;
      }
      if (this.#client !== client) return;
      this.#failures = 0;
      this.#beat(client);
      const resumed = [...this.#deaf];
      this.#deaf.clear();
      for (const s of resumed) s.onResume?.();
    })();
    return this.#connecting;
  }

  /** Round trips on the LISTEN connection while it is the current one: one that does not come back loses it. */
  #beat(client: pg.Client) {
    clearInterval(this.#heartbeat);
    this.#heartbeat = setInterval(() => {
      if (this.#client !== client) return;
      const timeout = setTimeout(() => this.#lost(client), HEARTBEAT_TIMEOUT_MS).unref();
      client.query('SELECT 1').then(
        () => clearTimeout(timeout),
        () => {
          clearTimeout(timeout);
          this.#lost(client);
        },
      );
    }, HEARTBEAT_MS);
    this.#heartbeat.unref();
  }

  /** The connection `client` is gone (or never came): every subscriber is deaf until the next one is in place. */
  #lost(client: pg.Client) {
    if (this.#client !== client) return;
    clearInterval(this.#heartbeat);
    this.#client = undefined;
    this.#connecting = undefined;
    client.end().catch(() => {});
    if (this.#closed) return;
    for (const subscribers of this.#subscribers.values())
      for (const s of subscribers) {
        if (!this.#deaf.has(s)) s.onLost?.();
        this.#deaf.add(s);
      }
    const delay =
      Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** this.#failures++) * (0.8 + Math.random() * 0.4);
    this.#retry = setTimeout(() => {
      if (!this.#closed && this.#client === undefined) void this.#connect();
    }, delay);
    this.#retry.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    clearInterval(this.#heartbeat);
    const client = this.#client;
    this.#client = undefined;
    this.#subscribers.clear();
    this.#deaf.clear();
    await client?.end().catch(() => {});
  }
}
