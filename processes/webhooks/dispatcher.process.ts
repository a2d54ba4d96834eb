import { BoundedMap } from '../../platform/bounded-map.ts';
import { DueQueue } from '../../platform/due/due-queue.ts';
import type { Services } from '../../platform/services.ts';
import type { BackgroundProcess } from '../process.ts';
import {
  type Claimed,
  cancelForInactiveEndpoints,
  DELIVERIES_CHANNEL,
  type DueDelivery,
  dueDeliveries,
  withEndpoints,
} from './deliveries.ts';
import { DispatchQueue } from './dispatch-queue.ts';
import { type SendOutcome, WebhookSender } from './http-sender.ts';
import { Outcomes } from './outcomes.ts';
import { signatureHeader } from './signer.ts';

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
 * AUTO_DISABLE_AFTER_EXHAUSTED exhausted deliveries in a row.
 */
export class WebhookDispatcher implements BackgroundProcess {
  readonly name = 'webhook-dispatcher';
  readonly #services: Services;
  readonly #senderOptions: ConstructorParameters<typeof WebhookSender>[0];
  /** Its HTTP client (keep-alive connections per endpoint): made for the first request, closed by stop(). */
  #sender?: WebhookSender;
  readonly #outcomes: Outcomes;
  readonly #concurrency: number;
  readonly #perEndpoint: number;
  readonly #timeoutMs: number;
  readonly #pollMs: number;
  /** The deliveries due; those claimed here are held (waiting or in flight) until their outcome is known. */
  readonly #due: DueQueue<DueDelivery>;
  /** Claimed deliveries, one lane per endpoint; those taken from it are in flight until `done`. */
  readonly #queue: DispatchQueue<Claimed>;
  /** Endpoint secrets opened, by their sealed text: opening costs a decryption per delivery otherwise. */
  readonly #secrets = new BoundedMap<string, string>(1000);
  /** Requests finished so far (wakes a loop waiting for endpoints at their cap). */
  #finished = 0;
  #wake: () => void = () => {};
  #slotFreed: () => void = () => {};
  /** Called whenever a request finishes (runOnce and stop wait for them this way). */
  #responses: (() => void)[] = [];
  #signalled = false;
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
    this.#outcomes = new Outcomes(services, options.random ?? Math.random);
    this.#senderOptions = {
      allowPrivateNetworks: options.allowPrivateNetworks ?? services.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
      timeoutMs: this.#timeoutMs,
      connectionsPerOrigin: this.#perEndpoint,
    };
  }

  start(): void {
    if (this.#loop) return;
    this.#stopped = false;
    // After a lost LISTEN connection, look at once: deliveries announced while deaf were never heard.
    this.#unlisten = this.#services.db.listen(DELIVERIES_CHANNEL, () => this.#signal(), {
      onResume: () => this.#signal(),
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
    await this.#sender?.close();
    this.#sender = undefined;
    this.#closing = false;
    if (this.#unlisten) await (await this.#unlisten)();
  }

  /** Sends everything due now and waits for the outcomes (tests walk the retry schedule with a ManualClock this way). */
  async runOnce(): Promise<number> {
    await cancelForInactiveEndpoints(this.#services.db, this.#services.clock.now());
    let sent = 0;
    for (;;) {
      const room = this.#room();
      const claimed = room > 0 ? await this.#claim(room) : [];
      this.#dispatch(claimed);
      sent += claimed.length;
      if (claimed.length > 0) continue;
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
        if (Date.now() - lastSweep >= this.#pollMs) {
          lastSweep = Date.now();
          await cancelForInactiveEndpoints(this.#services.db, this.#services.clock.now());
        }
        const room = this.#room();
        const claimed = room >= threshold ? await this.#claim(room) : [];
        this.#dispatch(claimed);
        // Something was due: claim again once there is room for a good batch. Nothing was: wait for news
        // (NOTIFY from the fan-out) or the next poll, which also picks up retries that fell due.
        if (claimed.length > 0 || room < threshold) await this.#sleep(() => this.#room() >= threshold);
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

  /** New deliveries were recorded (NOTIFY) or stop() was called. */
  #signal = () => {
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

  async #claim(limit: number): Promise<Claimed[]> {
    return withEndpoints(this.#services.db, await this.#due.claim(limit));
  }

  #dispatch(rows: Claimed[]): void {
    for (const row of rows) this.#queue.push(row);
    this.#fill();
  }

  /**
   * Starts waiting deliveries while request slots are free (at most `perEndpoint` to one endpoint), each signed
   * with the endpoint's secret (and the previous one during a rotation's overlap) at the moment it is sent.
   */
  #fill(): void {
    while (!this.#closing && this.#queue.inFlight < this.#concurrency) {
      const row = this.#queue.take();
      if (!row) return;
      const now = this.#services.clock.now();
      const started = performance.now();
      void this.#send(row, now).then((outcome) => {
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

  /** Signs and POSTs one delivery; resolves with the outcome, never rejects. */
  async #send(row: Claimed, now: Date): Promise<SendOutcome> {
    const timestamp = Math.floor(now.getTime() / 1000);
    // Encoded once: signed and sent as these bytes.
    const bytes = Buffer.from(row.body);
    let signature: string;
    try {
      const secrets = [this.#open(row.sealed_secret)];
      if (row.previous_sealed_secret && row.previous_valid_until && new Date(row.previous_valid_until) > now)
        secrets.push(this.#open(row.previous_sealed_secret));
      signature = signatureHeader(secrets, row.id, timestamp, bytes);
    } catch (error) {
      return { status: null, excerpt: null, error: `not signed: ${(error as Error).message}` };
    }
    this.#sender ??= new WebhookSender(this.#senderOptions);
    return this.#sender.post(
      row.url,
      {
        'content-type': 'application/json',
        'user-agent': 'Postline-Webhooks/1',
        'webhook-id': row.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signature,
      },
      bytes,
    );
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

  #open(sealed: string): string {
    let plain = this.#secrets.get(sealed);
    if (!plain) {
      plain = this.#services.secrets.open(sealed);
      this.#secrets.set(sealed, plain);
    }
    return plain;
  }
}
