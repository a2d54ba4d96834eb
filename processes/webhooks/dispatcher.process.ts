import { randomUUID } from 'node:crypto';
import type { Services } from '../../platform/services.ts';
import type { BackgroundProcess } from '../process.ts';
import { DELIVERIES_CHANNEL, deliveriesRecorded, saveDeliveries, unwrittenRow } from './deliveries.ts';
import { DispatchQueue } from './dispatch-queue.ts';
import { recordFailure } from './failures.ts';
import { type DeliveryTaker, type HandOver, offerTaker, withdrawTaker } from './hand-over.ts';
import { Holdings } from './holdings.ts';
import { NOT_SENT, type Result, SenderThread } from './sender-thread.ts';
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
 * more than claims, as they cost no round trip. The rest of a batch is written for a later claim.
 */
const HAND_OVER_AHEAD = 64;
/**
 * The sender thread is given up to this many times the concurrency (and the per-endpoint cap): its request slots
 * refill from what it holds, without a round trip to this thread, while the bulk of what is claimed waits here, so
 * that stopping, or a thread that dies, concerns few deliveries and bodies are not copied over long before use.
 */
const SENDER_WINDOW = 2;
/** What a delivery handed over unwritten is given as its lease: none, no other dispatcher can claim it. */
const UNLEASED = Number.MAX_SAFE_INTEGER;

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
  /** The claim's token; null for a delivery handed over by the fan-out unwritten. */
  claim_token: string | null;
  /** Clock time of the claim or hand-over (not a column). */
  claimedAt: number;
  /** Set while a delivery handed over unwritten has no row (see hand-over.ts). */
  unwritten?: Unwritten;
}

/** What the row of a delivery handed over unwritten needs besides, and whom to tell once it is written. */
export interface Unwritten {
  sourceKey: string;
  createdAt: Date;
  recorded: () => void;
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
 * during HTTP), or takes them from the fan-out of its own process already claimed (hand-over.ts), hands them to
 * its sender thread, which signs and POSTs them, and records each attempt. Non-2xx or no answer within 30 s is
 * retried on the spec's schedule; 429/503 Retry-After pushes the next attempt back; after 8 attempts the delivery
 * is exhausted. 410 Gone disables the endpoint at once; so do AUTO_DISABLE_AFTER_EXHAUSTED exhausted deliveries in
 * a row.
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
  /** Deliveries held per endpoint: in the sender thread, or promised to the fan-out. */
  readonly #held = new Holdings();
  /** Deliveries waiting for the sender thread (those in it count as in flight here). */
  readonly #waiting: DispatchQueue<Claimed>;
  /** Deliveries in the sender thread, by the number they were sent under. */
  readonly #sent = new Map<number, Claimed>();
  #next = 0;
  /** Failures being written. */
  readonly #recording = new Set<Promise<void>>();
  readonly #secrets = new Map<string, string>();
  /** Outcomes received so far (wakes a loop waiting for capped endpoints). */
  #finished = 0;
  #wake: () => void = () => {};
  #slotFreed: () => void = () => {};
  #outcomes: (() => void)[] = [];
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
    this.#waiting = new DispatchQueue(SENDER_WINDOW * this.#perEndpoint, (row) => row.webhook_id);
    this.#successes = new SuccessLog(services.db, (error, count) =>
      services.log.error({ err: error, count }, 'webhook successes failed to record'),
    );
    this.#sender = new SenderThread(
      {
        allowPrivateNetworks: options.allowPrivateNetworks ?? services.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
        timeoutMs: this.#timeoutMs,
        concurrency: this.#concurrency,
        perEndpoint: this.#perEndpoint,
      },
      this.#onResults,
    );
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
    // Requests in flight finish (and their outcomes come back); what was not started is given back.
    const unsent = (await this.#sender.close()).map((n) => this.#taken(n)).filter((r) => r !== undefined);
    for (const row of this.#waiting.drain()) {
      this.#held.remove(row.webhook_id);
      unsent.push(row);
    }
    await this.#giveBack(unsent);
    await Promise.all(this.#recording);
    await this.#successes.idle();
    if (this.#unlisten) await (await this.#unlisten)();
  }

  /** Sends everything due now and waits for the outcomes (tests walk the retry schedule with a ManualClock this way). */
  async runOnce(): Promise<number> {
    await this.#cancelForInactiveEndpoints();
    let sent = 0;
    for (;;) {
      const room = this.#room();
      const claimed = room > 0 ? await this.#claim(room) : [];
      this.#dispatch(claimed);
      sent += claimed.length;
      if (claimed.length === 0) {
        if (this.#sent.size === 0 && this.#waiting.waiting === 0) {
          await Promise.all(this.#recording);
          await this.#successes.idle();
          return sent;
        }
        await new Promise<void>((resolve) => this.#outcomes.push(resolve));
      }
    }
  }

  /** Takes the fan-out's new deliveries of one batch (see hand-over.ts), within HAND_OVER_AHEAD. */
  handOver(): HandOver {
    const reserved: string[] = [];
    const total = HAND_OVER_AHEAD * this.#concurrency;
    const perEndpoint = HAND_OVER_AHEAD * this.#perEndpoint;
    return {
      reserve: (webhookId) => {
        if (this.#closing || this.#held.total >= total || !this.#held.reserve(webhookId, perEndpoint))
          return false;
        reserved.push(webhookId);
        return true;
      },
      settle: (handedOver) => {
        for (const webhookId of reserved.splice(0)) this.#held.remove(webhookId);
        if (!handedOver?.length) return;
        // Stopped meanwhile: written for a later attempt rather than sent.
        if (this.#closing) this.#giveBack(handedOver).catch(this.#logGiveBack);
        else this.#dispatch(handedOver);
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
        this.#dispatch(claimed);
        // Something was due: claim again once there is room for a good batch. Nothing was: wait for news
        // (NOTIFY from the fan-out) or the next poll, which also picks up retries that fell due.
        if (claimed.length > 0 || room < threshold) await this.#sleep(() => this.#room() >= threshold);
        else if (this.#sent.size > 0) {
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

  /** Until signalled, or until `ready()` holds after outcomes came back, or a poll interval passed. */
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
    return CLAIM_AHEAD * this.#concurrency - this.#held.total;
  }

  async #claim(limit: number): Promise<Claimed[]> {
    const now = this.#services.clock.now();
    const held = this.#held.snapshot();
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

  /** Claimed deliveries wait here, per endpoint, until the sender thread has room for them (SENDER_WINDOW). */
  #dispatch(rows: Claimed[]): void {
    for (const row of rows) {
      this.#held.add(row.webhook_id);
      this.#waiting.push(row);
    }
    this.#handToSender();
  }

  /**
   * Hands waiting deliveries to the sender thread, signed with the endpoint's secret (and the previous one during a
   * rotation's overlap), up to SENDER_WINDOW times the concurrency (and the per-endpoint cap). The thread starts
   * them as its request slots free, `perEndpoint` at most to one endpoint.
   */
  #handToSender(): void {
    if (this.#closing || this.#waiting.waiting === 0) return;
    const now = this.#services.clock.now();
    const ms = now.getTime();
    while (this.#waiting.inFlight < SENDER_WINDOW * this.#concurrency) {
      const row = this.#waiting.take();
      if (!row) return;
      // Its lease would end before a request could: leave it to a later claim rather than risk a double send.
      if (row.claim_token !== null && ms - row.claimedAt > LEASE_MARGIN_MS) {
        this.#waiting.done(row.webhook_id);
        this.#held.remove(row.webhook_id);
        continue;
      }
      const n = this.#next++;
      this.#sent.set(n, row);
      const secrets = [this.#open(row.sealed_secret)];
      if (
        row.previous_sealed_secret &&
        row.previous_valid_until &&
        new Date(row.previous_valid_until) > now
      ) {
        secrets.push(this.#open(row.previous_sealed_secret));
      }
      this.#sender.send([
        n,
        row.webhook_id,
        row.url,
        row.id,
        secrets,
        row.body,
        ms,
        row.claim_token === null ? UNLEASED : row.claimedAt + LEASE_MARGIN_MS - ms,
      ]);
    }
  }

  /** The delivery sent under `n`, no longer held. */
  #taken(n: number): Claimed | undefined {
    const row = this.#sent.get(n);
    if (!row) return undefined;
    this.#sent.delete(n);
    this.#waiting.done(row.webhook_id);
    this.#held.remove(row.webhook_id);
    return row;
  }

  /** Outcomes from the sender thread: successes are written in batches, failures one by one. */
  #onResults = (results: Result[]): void => {
    for (const [n, status, retryAfter, excerpt, error, latencyMs, at] of results) {
      const row = this.#taken(n);
      if (!row) continue;
      this.#finished++;
      // Not sent (its lease ran out while it waited): a later claim takes it.
      if (at === NOT_SENT) {
        if (row.unwritten) this.#giveBack([row]).catch(this.#logGiveBack);
        continue;
      }
      const sentAt = at === null ? this.#services.clock.now() : new Date(at);
      if (status !== null && status >= 200 && status < 300) {
        this.#successes.add(row, sentAt, status, latencyMs, excerpt);
        continue;
      }
      const outcome = { status, retryAfter: retryAfter ?? undefined, excerpt, error };
      const recording: Promise<void> = recordFailure(
        this.#services,
        this.#random,
        row,
        row.attempts + 1,
        outcome,
        latencyMs,
        sentAt,
      )
        .catch((err) =>
          this.#services.log.error({ err, delivery: row.id }, 'webhook delivery failed to record'),
        )
        .finally(() => this.#recording.delete(recording));
      this.#recording.add(recording);
    }
    this.#handToSender();
    for (const resolve of this.#outcomes.splice(0)) resolve();
    this.#slotFreed();
  };

  /**
   * Gives unsent deliveries back (stop): claimed ones are released, those handed over unwritten are written, due
   * now, for any dispatcher.
   */
  async #giveBack(rows: Claimed[]): Promise<void> {
    const claimed = rows.filter((r) => r.claim_token !== null);
    if (claimed.length > 0) {
      await this.#services.db.query(
        `UPDATE webhook_deliveries SET claim_token = NULL
         WHERE webhook_id = ANY($1) AND id = ANY($2) AND claim_token = ANY($3)`,
        [
          [...new Set(claimed.map((r) => r.webhook_id))],
          claimed.map((r) => r.id),
          [...new Set(claimed.map((r) => r.claim_token))],
        ],
      );
    }
    const unwritten = rows.filter((r) => r.unwritten);
    if (unwritten.length > 0) {
      await saveDeliveries(this.#services.db, unwritten.map(unwrittenRow), this.#services.clock.now());
      for (const row of unwritten) row.unwritten?.recorded();
      await this.#services.db.query('SELECT pg_notify($1, $2)', [DELIVERIES_CHANNEL, '']);
    }
  }

  #logGiveBack = (error: unknown) =>
    this.#services.log.error({ err: error }, 'webhook deliveries failed to be given back');

  #open(sealed: string): string {
    let plain = this.#secrets.get(sealed);
    if (!plain) {
      plain = this.#services.secrets.open(sealed);
      if (this.#secrets.size > 1000) this.#secrets.clear();
      this.#secrets.set(sealed, plain);
    }
    return plain;
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
