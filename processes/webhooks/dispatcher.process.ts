import { randomUUID } from 'node:crypto';
import type { Services } from '../../platform/services.ts';
import type { BackgroundProcess } from '../process.ts';
import { DELIVERIES_CHANNEL, deliveriesRecorded } from './deliveries.ts';
import { DispatchQueue } from './dispatch-queue.ts';
import { recordFailure } from './failures.ts';
import { type DeliveryTaker, type HandOver, offerTaker, withdrawTaker } from './hand-over.ts';
import { SenderThread, type Sent } from './sender-thread.ts';
import { SuccessLog } from './successes.ts';

/**
 * How long a claim lasts: past the request time-out, so a crashed dispatcher's work is picked up again. The lease
 * lives in columns no index covers, so claiming is a HOT update that leaves the indexes alone.
 */
const LEASE_MARGIN_MS = 30_000;
/** Claims run ahead of sending by this many times the concurrency (and the per-endpoint cap). */
const CLAIM_AHEAD = 4;
/**
 * Deliveries handed over by the fan-out of this process, as many times the concurrency (and the per-endpoint cap):
 * more than claims, as they cost no round trip. An endpoint too slow to start them all within the lease margin
 * (slower than about LEASE_MARGIN_MS / HAND_OVER_AHEAD per request) leaves the rest to a later claim.
 */
const HAND_OVER_AHEAD = 64;

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

/** A delivery claimed for an attempt, with what sending it needs. */
export interface Claimed {
  id: string;
  webhook_id: string;
  org_id: string;
  mode: 'live' | 'test';
  event_type: string;
  body: string;
  attempts: number;
  url: string;
  sealed_secret: string;
  previous_sealed_secret: string | null;
  previous_valid_until: Date | null;
  claim_token: string;
  /** Clock time of the claim (set by the claimer, not a column). */
  claimedAt: number;
}

const CLAIM_SQL = `
WITH candidates AS (
  SELECT c.id, c.webhook_id, c.next_attempt_at, coalesce(b.n, 0) AS busy,
         row_number() OVER (PARTITION BY c.webhook_id ORDER BY c.next_attempt_at, c.id) AS rn
  FROM webhook_endpoints e
  LEFT JOIN unnest($4::text[], $5::int[]) AS b(webhook_id, n) ON b.webhook_id = e.webhook_id
  CROSS JOIN LATERAL (
    SELECT d.id, d.webhook_id, d.next_attempt_at FROM webhook_deliveries d
    WHERE d.webhook_id = e.webhook_id AND d.status = 'pending' AND d.next_attempt_at <= $1
      AND (d.claim_token IS NULL OR d.leased_until <= $1)
    ORDER BY d.next_attempt_at LIMIT $3
    FOR UPDATE OF d SKIP LOCKED
  ) c
  WHERE e.active AND NOT e.deleted AND coalesce(b.n, 0) < $3
), chosen AS (
  SELECT id, webhook_id FROM candidates WHERE rn <= $3 - busy ORDER BY next_attempt_at, id LIMIT $2
)
UPDATE webhook_deliveries d SET leased_until = $6, claim_token = $7
FROM chosen, webhook_endpoints e
WHERE d.webhook_id = chosen.webhook_id AND d.id = chosen.id AND e.webhook_id = d.webhook_id
RETURNING d.id, d.webhook_id, d.org_id, d.mode, d.event_type, d.body, d.attempts, d.claim_token,
  e.url, e.sealed_secret, e.previous_sealed_secret, e.previous_valid_until`;

/**
 * Webhook dispatcher: claims due deliveries (FOR UPDATE SKIP LOCKED, then a lease, so no transaction stays open
 * during HTTP), or takes them from the fan-out of its own process already claimed (hand-over.ts), POSTs them
 * signed, and records each attempt. Non-2xx or no answer within 30 s is retried on the spec's schedule; 429/503
 * Retry-After pushes the next attempt back; after 8 attempts the delivery is exhausted. 410 Gone disables the
 * endpoint at once; so do AUTO_DISABLE_AFTER_EXHAUSTED exhausted deliveries in a row.
 */
export class WebhookDispatcher implements BackgroundProcess, DeliveryTaker {
  readonly name = 'webhook-dispatcher';
  readonly #services: Services;
  readonly #sender: SenderThread;
  readonly #successes: SuccessLog;
  readonly #concurrency: number;
  readonly #perEndpoint: number;
  readonly #timeoutMs: number;
  readonly #pollMs: number;
  readonly #random: () => number;
  /** Claimed deliveries, waiting for a request slot or in flight. */
  readonly #queue: DispatchQueue;
  /** HTTP exchanges under way; they hold request slots. */
  readonly #sending = new Set<Promise<void>>();
  /** Outcomes being written. */
  readonly #recording = new Set<Promise<void>>();
  readonly #secrets = new Map<string, string>();
  /** Requests finished so far (wakes a loop waiting for capped endpoints). */
  #finished = 0;
  #wake: () => void = () => {};
  #slotFreed: () => void = () => {};
  #signalled = false;
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
    this.#random = options.random ?? Math.random;
    this.#queue = new DispatchQueue(this.#perEndpoint);
    this.#successes = new SuccessLog(services.db);
    this.#sender = new SenderThread({
      allowPrivateNetworks: options.allowPrivateNetworks ?? services.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
      timeoutMs: this.#timeoutMs,
      connectionsPerOrigin: this.#perEndpoint,
    });
  }

  start(): void {
    if (this.#loop) return;
    this.#stopped = false;
    this.#closing = false;
    this.#unlisten = this.#services.db.listen(DELIVERIES_CHANNEL, () => this.#signal());
    deliveriesRecorded.on('recorded', this.#signal);
    offerTaker(this.#services, this);
    this.#sender.start();
    this.#loop = this.#run();
  }

  /** Resolves once the sender thread is up (a benchmark waits for it before its clock starts). */
  ready(): Promise<void> {
    return this.#sender.ready;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#closing = true;
    withdrawTaker(this.#services, this);
    deliveriesRecorded.off('recorded', this.#signal);
    this.#signal();
    await this.#loop;
    this.#loop = undefined;
    await this.#release(this.#queue.drain());
    await Promise.all(this.#sending);
    await Promise.all(this.#recording);
    if (this.#unlisten) await (await this.#unlisten)();
    await this.#sender.close();
  }

  /** Sends everything due now and waits for the outcomes (tests walk the retry schedule with a ManualClock this way). */
  async runOnce(): Promise<number> {
    await this.#cancelForInactiveEndpoints();
    let sent = 0;
    for (;;) {
      const room = this.#room();
      const claimed = room > 0 ? await this.#claim(room) : [];
      this.#queue.push(claimed);
      this.#fill();
      sent += claimed.length;
      if (claimed.length === 0) {
        if (this.#sending.size === 0 && this.#queue.waiting === 0) {
          await Promise.all(this.#recording);
          return sent;
        }
        await Promise.race(this.#sending);
      }
    }
  }

  /** Takes the fan-out's new deliveries of one batch (see hand-over.ts), within HAND_OVER_AHEAD. */
  handOver(now: Date): HandOver {
    const reserved: string[] = [];
    const total = HAND_OVER_AHEAD * this.#concurrency;
    const perEndpoint = HAND_OVER_AHEAD * this.#perEndpoint;
    return {
      token: randomUUID(),
      leasedUntil: new Date(now.getTime() + this.#timeoutMs + LEASE_MARGIN_MS),
      reserve: (webhookId) => {
        if (this.#closing || this.#queue.held >= total || !this.#queue.reserve(webhookId, perEndpoint))
          return false;
        reserved.push(webhookId);
        return true;
      },
      settle: (committed) => {
        for (const webhookId of reserved.splice(0)) this.#queue.unreserve(webhookId);
        if (!committed?.length) return;
        if (this.#closing) {
          // Stopped meanwhile: give them back rather than leave them to their lease.
          this.#release(committed).catch((error) =>
            this.#services.log.error({ err: error }, 'webhook deliveries failed to be released'),
          );
          return;
        }
        this.#queue.push(committed);
        this.#fill();
      },
    };
  }

  async #run(): Promise<void> {
    let lastSweep = 0;
    const threshold = Math.ceil(this.#concurrency / 2);
    while (!this.#stopped) {
      try {
        if (Date.now() - lastSweep >= this.#pollMs) {
          lastSweep = Date.now();
          await this.#cancelForInactiveEndpoints();
        }
        const room = this.#room();
        const claimed = room >= threshold ? await this.#claim(room) : [];
        this.#queue.push(claimed);
        this.#fill();
        // Something was due: claim again once there is room for a good batch. Nothing was: wait for news
        // (NOTIFY from the fan-out) or the next poll, which also picks up retries that fell due.
        if (claimed.length > 0 || room < threshold) await this.#sleep(() => this.#room() >= threshold);
        else if (this.#sending.size > 0) {
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
    return CLAIM_AHEAD * this.#concurrency - this.#queue.held;
  }

  async #claim(limit: number): Promise<Claimed[]> {
    const now = this.#services.clock.now();
    const held = this.#queue.holdings();
    const { rows } = await this.#services.db.query<Claimed>(CLAIM_SQL, [
      now,
      limit,
      CLAIM_AHEAD * this.#perEndpoint,
      held.webhookIds,
      held.counts,
      new Date(now.getTime() + this.#timeoutMs + LEASE_MARGIN_MS),
      randomUUID(),
    ]);
    for (const row of rows) row.claimedAt = now.getTime();
    return rows;
  }

  /** Starts waiting deliveries while request slots are free, at most `perEndpoint` at a time to any one endpoint. */
  #fill(): void {
    if (this.#closing) return;
    const now = this.#services.clock.now().getTime();
    while (this.#queue.inFlight < this.#concurrency) {
      const row = this.#queue.take();
      if (!row) return;
      // Its lease would end before a request could: leave it to a later claim rather than risk a double send.
      if (now - row.claimedAt > LEASE_MARGIN_MS) this.#queue.done(row.webhook_id);
      else this.#launch(row);
    }
  }

  /** Gives claimed, unsent deliveries back (stop). */
  async #release(rows: Claimed[]): Promise<void> {
    if (rows.length === 0) return;
    await this.#services.db.query(
      `UPDATE webhook_deliveries SET claim_token = NULL
       WHERE webhook_id = ANY($1) AND id = ANY($2) AND claim_token = ANY($3)`,
      [
        [...new Set(rows.map((r) => r.webhook_id))],
        rows.map((r) => r.id),
        [...new Set(rows.map((r) => r.claim_token))],
      ],
    );
  }

  /** A request slot is held for the HTTP exchange only; recording its outcome runs on (the claim's lease covers it). */
  #launch(row: Claimed): void {
    const log = (error: unknown) =>
      this.#services.log.error({ err: error, delivery: row.id }, 'webhook delivery failed to record');
    const sending: Promise<void> = this.#send(row)
      .then((sent) => {
        const recording: Promise<void> = this.#record(row, sent)
          .catch(log)
          .finally(() => this.#recording.delete(recording));
        this.#recording.add(recording);
      })
      .catch(log)
      .finally(() => {
        this.#sending.delete(sending);
        this.#finished++;
        this.#queue.done(row.webhook_id);
        this.#fill();
        this.#slotFreed();
      });
    this.#sending.add(sending);
  }

  #open(sealed: string): string {
    let plain = this.#secrets.get(sealed);
    if (!plain) {
      plain = this.#services.secrets.open(sealed);
      if (this.#secrets.size > 1000) this.#secrets.clear();
      this.#secrets.set(sealed, plain);
    }
    return plain;
  }

  #send(row: Claimed): Promise<Sent & { now: Date }> {
    const now = this.#services.clock.now();
    const secrets = [this.#open(row.sealed_secret)];
    if (row.previous_sealed_secret && row.previous_valid_until && new Date(row.previous_valid_until) > now) {
      secrets.push(this.#open(row.previous_sealed_secret));
    }
    return this.#sender
      .send(row.url, row.id, Math.floor(now.getTime() / 1000), secrets, row.body)
      .then((sent) => ({ ...sent, now }));
  }

  async #record(row: Claimed, { outcome, now, latencyMs }: Sent & { now: Date }) {
    if (outcome.status !== null && outcome.status >= 200 && outcome.status < 300) {
      await this.#successes.record(row, now, outcome.status, latencyMs, outcome.excerpt);
      return;
    }
    await recordFailure(this.#services, this.#random, row, row.attempts + 1, outcome, latencyMs, now);
  }

  /** Pending deliveries of endpoints switched off or deleted are canceled when they fall due; a replay can resend them. */
  async #cancelForInactiveEndpoints(): Promise<void> {
    const now = this.#services.clock.now();
    await this.#services.db.query(
      `UPDATE webhook_deliveries d SET status = 'canceled', claim_token = NULL, last_error = 'the endpoint is disabled or deleted',
         updated_at = $1, completed_at = $1
       FROM webhook_endpoints e
       WHERE e.webhook_id = d.webhook_id AND (NOT e.active OR e.deleted) AND d.status = 'pending' AND d.next_attempt_at <= $1
         AND (d.claim_token IS NULL OR d.leased_until <= $1)`,
      [now],
    );
  }
}
