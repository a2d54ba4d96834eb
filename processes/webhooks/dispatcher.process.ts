import { DueQueue } from '../../platform/due/due-queue.ts';
import type { Services } from '../../platform/services.ts';
import type { BackgroundProcess } from '../process.ts';
import {
  activeEndpoints,
  type Claimed,
  cancelForInactiveEndpoints,
  DELIVERIES_CHANNEL,
  type DueDelivery,
  dueDeliveries,
  ENDPOINT_CHANGED,
  type EndpointAddress,
} from './deliveries.ts';
import { DispatchQueue } from './dispatch-queue.ts';
import { Outcomes } from './outcomes.ts';
import { SignedSender } from './signed-sender.ts';

/** How long a claim lasts past the request time-out (it is renewed while the delivery waits). */
const LEASE_MARGIN_MS = 30_000;
/** Claims run ahead of sending by this many times the concurrency (and the per-endpoint cap). */
const CLAIM_AHEAD = 4;

export interface DispatcherOptions {
  /** Requests in flight in this process. */
  concurrency?: number;
  /** Requests in flight to any one endpoint in this process, so a slow endpoint cannot take every slot. */
  perEndpoint?: number;
  timeoutMs?: number;
  pollMs?: number;
  allowPrivateNetworks?: boolean;
  random?: () => number;
}

/**
 * Webhook dispatcher: claims due deliveries from the outbox the fan-out writes (a due table, deliveries.ts: no
 * transaction stays open during HTTP), signs and POSTs them, and records each attempt. Claimed
 * deliveries wait in one lane per endpoint, served in turn, so a slow endpoint cannot hold up the others.
 * Non-2xx or no answer within 30 s is retried on the spec's schedule; 429/503 Retry-After pushes the next attempt
 * back; after 8 attempts the delivery is exhausted. 410 Gone disables the endpoint at once; so do
 * AUTO_DISABLE_AFTER_EXHAUSTED exhausted deliveries in a row. The deliveries claimed ahead of an endpoint deleted or
 * disabled (here, or elsewhere: NOTIFY, or the next poll) are taken from its lane and canceled; those of one given
 * another url or secret go with the new ones. Requests in flight finish.
 */
export class WebhookDispatcher implements BackgroundProcess {
  readonly name = 'webhook-dispatcher';
  readonly #services: Services;
  readonly #sender: SignedSender;
  readonly #outcomes: Outcomes;
  readonly #concurrency: number;
  readonly #perEndpoint: number;
  readonly #timeoutMs: number;
  readonly #pollMs: number;
  /** The deliveries due; those claimed here are held (waiting or in flight) until their outcome is known. */
  readonly #due: DueQueue<DueDelivery>;
  /** Claimed deliveries, one lane per endpoint; those taken from it are in flight until `done`. */
  readonly #queue: DispatchQueue<Claimed>;
  /** Requests finished so far (wakes a loop waiting for endpoints at their cap). */
  #finished = 0;
  #wake: () => void = () => {};
  #slotFreed: () => void = () => {};
  /** Called whenever a request finishes (runOnce and stop wait for them this way). */
  #responses: (() => void)[] = [];
  #signalled = false;
  /** An endpoint changed (NOTIFY): the loop looks again at those of the deliveries waiting. */
  #endpointsChanged = false;
  /** A refill of free request slots is scheduled for the end of this turn of the event loop. */
  #refillScheduled = false;
  /** stop() is under way: nothing more is sent. */
  #closing = false;
  #loop?: Promise<void>;
  #stopped = true;
  #unlisten?: Promise<() => Promise<void>>;

  constructor(services: Services, options: DispatcherOptions = {}) {
    this.#services = services;
    this.#concurrency = options.concurrency ?? 64;
    this.#perEndpoint = options.perEndpoint ?? 16;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#pollMs = options.pollMs ?? 1000;
    this.#queue = new DispatchQueue(this.#perEndpoint, (row) => row.webhook_id);
    const leaseMs = this.#timeoutMs + LEASE_MARGIN_MS;
    this.#due = new DueQueue(
      services,
      dueDeliveries({ perEndpoint: CLAIM_AHEAD * this.#perEndpoint, leaseMs }),
    );
    this.#outcomes = new Outcomes(services, options.random ?? Math.random, (webhookId) =>
      this.#cancel(this.#queue.remove(webhookId)),
    );
    this.#sender = new SignedSender(
      {
        allowPrivateNetworks: options.allowPrivateNetworks ?? services.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
        timeoutMs: this.#timeoutMs,
        connectionsPerOrigin: this.#perEndpoint,
      },
      (sealed) => services.secrets.open(sealed),
    );
  }

  start(): void {
    if (this.#loop) return;
    this.#stopped = false;
    // After a lost LISTEN connection, look at once: deliveries and endpoint changes announced while deaf were
    // never heard.
    const heard = (news: string) => this.#signal(news === ENDPOINT_CHANGED);
    this.#unlisten = this.#services.db.listen(DELIVERIES_CHANNEL, heard, {
      onResume: () => this.#signal(true),
    });
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#closing = true;
    this.#signal();
    await this.#loop;
    this.#loop = undefined;
    // Requests in flight finish and are recorded; claimed deliveries not started are given back.
    await this.#due.giveBack(this.#queue.drain(), { now: true });
    await this.#settled();
    await this.#sender.close();
    this.#closing = false;
    if (this.#unlisten) await (await this.#unlisten)();
  }

  /** Sends everything due now and waits for the outcomes (tests walk the retry schedule with a ManualClock this way). */
  async runOnce(): Promise<number> {
    await this.#cancel([]);
    let sent = 0;
    for (;;) {
      const room = this.#room();
      const claimed = room > 0 ? await this.#claim(room) : 0;
      sent += claimed;
      if (claimed > 0) continue;
      if (this.#queue.inFlight === 0 && this.#queue.waiting === 0) {
        await this.#settled();
        return sent;
      }
      await new Promise<void>((resolve) => this.#responses.push(resolve));
    }
  }

  /** Once every request in flight has finished and every outcome is written (or failed to be). */
  async #settled(): Promise<void> {
    while (this.#queue.inFlight > 0) await new Promise<void>((resolve) => this.#responses.push(resolve));
    await this.#outcomes.idle();
  }

  async #run(): Promise<void> {
    let lastSweep = 0;
    // A claim waits for room for as many deliveries as there are request slots: each claim is planned anew (about
    // 1 ms of PostgreSQL's CPU), so fewer, larger claims cost less.
    const threshold = this.#concurrency;
    while (!this.#stopped) {
      try {
        if (this.#endpointsChanged || Date.now() - lastSweep >= this.#pollMs) {
          lastSweep = Date.now();
          this.#endpointsChanged = false;
          await this.#cancel(await this.#recheck());
        }
        const room = this.#room();
        const claimed = room >= threshold ? await this.#claim(room) : 0;
        // Something was due: claim again once there is room for a good batch. Nothing was: wait for news
        // (NOTIFY from the fan-out) or the next poll, which also picks up retries that fell due.
        if (claimed > 0 || room < threshold) await this.#sleep(() => this.#room() >= threshold);
        else if (this.#queue.inFlight > 0) {
          // Due work may be waiting behind endpoints at their cap: look again after some requests finished.
          const seen = this.#finished;
          await this.#sleep(() => this.#finished - seen >= Math.ceil(this.#perEndpoint / 2));
        } else await this.#sleep(null);
      } catch (error) {
        this.#services.log.error({ err: error }, 'webhook dispatch loop failed');
        await this.#sleep(null);
      }
    }
  }

  /** New deliveries were recorded or an endpoint changed (NOTIFY), or stop() was called. */
  #signal = (endpointChanged = false) => {
    this.#endpointsChanged ||= endpointChanged;
    this.#signalled = true;
    this.#wake();
  };

  /** Until signalled, or until `ready()` holds after a request finished, or a poll interval passed. */
  #sleep(ready: (() => boolean) | null): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wake = () => {};
        this.#slotFreed = () => {};
        this.#signalled = false;
        resolve();
      };
      const timer = setTimeout(done, this.#pollMs);
      this.#wake = done;
      this.#slotFreed = () => {
        if (ready?.()) done();
      };
      if (this.#signalled || this.#stopped) done();
      else this.#slotFreed();
    });
  }

  /** Claims run ahead of sending, up to CLAIM_AHEAD times the concurrency, so a free request slot never waits on the database. */
  #room(): number {
    return CLAIM_AHEAD * this.#concurrency - this.#queue.waiting - this.#queue.inFlight;
  }

  /**
   * Claims due deliveries and puts them in their lanes with their endpoints' address and secrets as they are now
   * (a rotation is seen at once); resolves with how many were claimed. Those of an endpoint disabled or deleted
   * since the claim began are canceled.
   */
  async #claim(limit: number): Promise<number> {
    const rows = await this.#due.claim(limit);
    const endpoints = await activeEndpoints(this.#services.db, [...new Set(rows.map((r) => r.webhook_id))]);
    const gone = this.#enqueue(rows, endpoints);
    if (gone.length > 0) await this.#cancel(gone);
    return rows.length;
  }

  /**
   * Looks at the endpoints of the deliveries waiting in the lanes, in one statement: those of an endpoint no longer
   * active are taken out and returned; the others go on with its address and secrets as they are now (a url
   * changed meanwhile is where they go). Not per send: on the loop's polls and after a NOTIFY of a change.
   */
  async #recheck(): Promise<DueDelivery[]> {
    const keys = this.#queue.keys();
    if (keys.length === 0) return [];
    const endpoints = await activeEndpoints(this.#services.db, keys);
    const waiting = keys.flatMap((key) => this.#queue.remove(key));
    return this.#enqueue(waiting, endpoints);
  }

  /** Puts deliveries in their lanes with their active endpoint (`endpoints`), and starts them; returns the others. */
  #enqueue(rows: DueDelivery[], endpoints: Map<string, EndpointAddress>): DueDelivery[] {
    const gone: DueDelivery[] = [];
    for (const row of rows) {
      const endpoint = endpoints.get(row.webhook_id);
      if (endpoint) this.#queue.push({ ...row, ...endpoint });
      else gone.push(row);
    }
    this.#fill();
    return gone;
  }

  /**
   * Gives back the claims of deliveries taken from their lanes (their endpoint is no longer active) and cancels
   * them, with every other pending delivery of an inactive endpoint that no claim holds.
   */
  async #cancel(rows: DueDelivery[]): Promise<void> {
    if (rows.length > 0) await this.#due.giveBack(rows, { now: true });
    await cancelForInactiveEndpoints(this.#services.db, this.#services.clock.now());
  }

  /** Starts waiting deliveries while request slots are free (at most `perEndpoint` to one endpoint). */
  #fill(): void {
    while (!this.#closing && this.#queue.inFlight < this.#concurrency) {
      const row = this.#queue.take();
      if (!row) return;
      const now = this.#services.clock.now();
      const started = performance.now();
      void this.#sender.send(row, now).then((outcome) => {
        this.#finish(row);
        this.#outcomes.record(row, outcome, Math.round(performance.now() - started), now);
        this.#refill();
      });
    }
  }

  /**
   * Fills the slots freed by responses once this turn of the event loop has read every response in it, not from
   * within each response's handling: the next requests are then written together (in bench:webhooks' fast-receiver
   * scenario, a fifth less CPU on the main thread per delivery and a tenth less in the receiver).
   */
  #refill(): void {
    if (this.#refillScheduled) return;
    this.#refillScheduled = true;
    setImmediate(() => {
      this.#refillScheduled = false;
      this.#fill();
    });
  }

  /**
   * The delivery's request slot is free, and it is no longer held; one made due again while in flight (a retry
   * request, a replay) and claimed meanwhile is sent again, its new round.
   */
  #finish(row: Claimed): void {
    this.#queue.done(row.webhook_id);
    const again = this.#due.settled(row);
    if (again) this.#queue.push({ ...row, ...again });
    this.#finished++;
    for (const resolve of this.#responses.splice(0)) resolve();
    this.#slotFreed();
  }
}
