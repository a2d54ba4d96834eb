import { randomUUID } from 'node:crypto';
import type { Services } from '../../platform/services.ts';
import type { BackgroundProcess } from '../process.ts';
import { DELIVERIES_CHANNEL, deliveriesRecorded } from './deliveries.ts';
import { recordFailure } from './failures.ts';
import { type SendOutcome, WebhookSender } from './http-sender.ts';
import { signatureHeader } from './signer.ts';

/**
 * How long a claim lasts: past the request time-out, so a crashed dispatcher's work is picked up again. The lease
 * lives in columns no index covers, so claiming is a HOT update that leaves the indexes alone.
 */
const LEASE_MARGIN_MS = 30_000;

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
  /** Clock time of the claim (set here, not a column). */
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
  SELECT id FROM candidates WHERE rn <= $3 - busy ORDER BY next_attempt_at, id LIMIT $2
)
UPDATE webhook_deliveries d SET leased_until = $6, claim_token = $7
FROM chosen, webhook_endpoints e
WHERE d.id = chosen.id AND e.webhook_id = d.webhook_id
RETURNING d.id, d.webhook_id, d.org_id, d.mode, d.event_type, d.body, d.attempts, d.claim_token,
  e.url, e.sealed_secret, e.previous_sealed_secret, e.previous_valid_until`;

/** Successes are recorded in batches: one statement for many deliveries keeps the database out of the way. */
const SUCCESS_SQL = `
WITH r AS (
  SELECT * FROM json_to_recordset($1::json)
    AS r(id text, token text, attempt int, at timestamptz, status int, latency int, excerpt text)
), d AS (
  UPDATE webhook_deliveries w SET status = 'succeeded', attempts = r.attempt, claim_token = NULL,
    last_response_status = r.status, last_error = NULL, updated_at = r.at, completed_at = r.at
  FROM r WHERE w.id = r.id AND w.claim_token = r.token RETURNING w.webhook_id, r.at
), a AS (
  INSERT INTO webhook_attempts (delivery_id, attempt, attempted_at, response_status, latency_ms, response_excerpt)
  SELECT id, attempt, at, status, latency, excerpt FROM r
)
UPDATE webhook_endpoints e SET consecutive_failures = 0, exhausted_streak = 0, last_success_at = s.at
FROM (SELECT webhook_id, max(at) AS at FROM d GROUP BY webhook_id) s
WHERE e.webhook_id = s.webhook_id
  AND (e.consecutive_failures > 0 OR e.exhausted_streak > 0 OR e.last_success_at IS NULL OR e.last_success_at < s.at)`;

interface Success {
  row: Claimed;
  at: Date;
  status: number;
  latencyMs: number;
  excerpt: string | null;
  done: () => void;
  failed: (error: unknown) => void;
}

/**
 * Webhook dispatcher: claims due deliveries (FOR UPDATE SKIP LOCKED, then a lease, so no transaction stays open
 * during HTTP), POSTs them signed, and records each attempt. Non-2xx or no answer within 30 s is retried on the
 * spec's schedule; 429/503 Retry-After pushes the next attempt back; after 8 attempts the delivery is exhausted.
 * 410 Gone disables the endpoint at once; so do AUTO_DISABLE_AFTER_EXHAUSTED exhausted deliveries in a row.
 */
export class WebhookDispatcher implements BackgroundProcess {
  readonly name = 'webhook-dispatcher';
  readonly #services: Services;
  readonly #sender: WebhookSender;
  readonly #concurrency: number;
  readonly #perEndpoint: number;
  readonly #timeoutMs: number;
  readonly #pollMs: number;
  readonly #random: () => number;
  /** HTTP exchanges under way; they hold request slots. */
  readonly #inFlight = new Set<Promise<void>>();
  /** Outcomes being written. */
  readonly #recording = new Set<Promise<void>>();
  readonly #perWebhook = new Map<string, number>();
  readonly #secrets = new Map<string, string>();
  readonly #successes: Success[] = [];
  #flushTimer?: ReturnType<typeof setTimeout>;
  #flushing = false;
  /** Requests finished so far (wakes a loop waiting for capped endpoints). */
  #finished = 0;
  /** Claimed deliveries waiting for a request slot. */
  #buffer: Claimed[] = [];
  #wake: () => void = () => {};
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
    this.#sender = new WebhookSender({
      allowPrivateNetworks: options.allowPrivateNetworks ?? services.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
      timeoutMs: this.#timeoutMs,
      connectionsPerOrigin: this.#perEndpoint,
    });
  }

  start(): void {
    if (this.#loop) return;
    this.#stopped = false;
    this.#unlisten = this.#services.db.listen(DELIVERIES_CHANNEL, () => this.#signal());
    deliveriesRecorded.on('recorded', this.#signal);
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#closing = true;
    deliveriesRecorded.off('recorded', this.#signal);
    this.#signal();
    await this.#loop;
    this.#loop = undefined;
    await this.#release(this.#buffer.splice(0));
    await Promise.all(this.#inFlight);
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
      this.#buffer.push(...claimed);
      this.#fill();
      sent += claimed.length;
      if (claimed.length === 0) {
        if (this.#inFlight.size === 0 && this.#buffer.length === 0) {
          await Promise.all(this.#recording);
          return sent;
        }
        await Promise.race(this.#inFlight);
      }
    }
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
        this.#buffer.push(...claimed);
        this.#fill();
        // Something was due: claim again once there is room for a good batch. Nothing was: wait for news
        // (NOTIFY from the fan-out) or the next poll, which also picks up retries that fell due.
        if (claimed.length > 0 || room < threshold) await this.#sleep(() => this.#room() >= threshold);
        else if (this.#inFlight.size > 0) {
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

  #slotFreed: () => void = () => {};

  /** Claims run ahead of sending, up to four times the concurrency, so a free request slot never waits on the database. */
  #room(): number {
    return 4 * this.#concurrency - this.#inFlight.size - this.#buffer.length;
  }

  async #claim(limit: number): Promise<Claimed[]> {
    const now = this.#services.clock.now();
    const held = new Map(this.#perWebhook);
    for (const row of this.#buffer) held.set(row.webhook_id, (held.get(row.webhook_id) ?? 0) + 1);
    const busy = [...held.entries()].filter(([, n]) => n > 0);
    const { rows } = await this.#services.db.query<Claimed>(CLAIM_SQL, [
      now,
      limit,
      4 * this.#perEndpoint,
      busy.map(([id]) => id),
      busy.map(([, n]) => n),
      new Date(now.getTime() + this.#timeoutMs + LEASE_MARGIN_MS),
      randomUUID(),
    ]);
    for (const row of rows) row.claimedAt = now.getTime();
    return rows;
  }

  /** Starts buffered deliveries while slots are free, at most `perEndpoint` at a time to any one endpoint. */
  #fill(): void {
    if (this.#closing || this.#buffer.length === 0 || this.#inFlight.size >= this.#concurrency) return;
    const now = this.#services.clock.now().getTime();
    const waiting: Claimed[] = [];
    const buffer = this.#buffer;
    let i = 0;
    for (; i < buffer.length && this.#inFlight.size < this.#concurrency; i++) {
      const row = buffer[i];
      // Its lease would end before a request could: leave it to a later claim rather than risk a double send.
      if (now - row.claimedAt > LEASE_MARGIN_MS) continue;
      if ((this.#perWebhook.get(row.webhook_id) ?? 0) >= this.#perEndpoint) waiting.push(row);
      else this.#launch(row);
    }
    // Every slot taken: the rest waits as it is (called on each finished request, so no scan of the whole buffer).
    this.#buffer =
      i === 0 ? buffer : waiting.length === 0 ? buffer.slice(i) : waiting.concat(buffer.slice(i));
  }

  /** Gives claimed, unsent deliveries back (stop). */
  async #release(rows: Claimed[]): Promise<void> {
    if (rows.length === 0) return;
    await this.#services.db.query(
      'UPDATE webhook_deliveries SET claim_token = NULL WHERE id = ANY($1) AND claim_token = ANY($2)',
      [rows.map((r) => r.id), rows.map((r) => r.claim_token)],
    );
  }

  /** A request slot is held for the HTTP exchange only; recording its outcome runs on (the claim's lease covers it). */
  #launch(row: Claimed): void {
    this.#perWebhook.set(row.webhook_id, (this.#perWebhook.get(row.webhook_id) ?? 0) + 1);
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
        this.#inFlight.delete(sending);
        this.#finished++;
        const left = (this.#perWebhook.get(row.webhook_id) ?? 1) - 1;
        if (left > 0) this.#perWebhook.set(row.webhook_id, left);
        else this.#perWebhook.delete(row.webhook_id);
        this.#fill();
        this.#slotFreed();
      });
    this.#inFlight.add(sending);
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

  async #send(row: Claimed) {
    const now = this.#services.clock.now();
    const timestamp = Math.floor(now.getTime() / 1000);
    const secrets = [this.#open(row.sealed_secret)];
    if (row.previous_sealed_secret && row.previous_valid_until && new Date(row.previous_valid_until) > now) {
      secrets.push(this.#open(row.previous_sealed_secret));
    }
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'Postline-Webhooks/1',
      'webhook-id': row.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(secrets, row.id, timestamp, row.body),
    };
    const started = performance.now();
    const outcome = await this.#sender.post(row.url, headers, row.body);
    return { outcome, now, latencyMs: Math.round(performance.now() - started) };
  }

  async #record(
    row: Claimed,
    { outcome, now, latencyMs }: { outcome: SendOutcome; now: Date; latencyMs: number },
  ) {
    const attempt = row.attempts + 1;
    if (outcome.status !== null && outcome.status >= 200 && outcome.status < 300) {
      await new Promise<void>((done, failed) => {
        this.#successes.push({
          row,
          at: now,
          status: outcome.status!,
          latencyMs,
          excerpt: outcome.excerpt,
          done,
          failed,
        });
        this.#flushTimer ??= setTimeout(() => {
          this.#flushTimer = undefined;
          void this.#flushSuccesses();
        }, 2);
      });
      return;
    }
    await recordFailure(this.#services, this.#random, row, attempt, outcome, latencyMs, now);
  }

  /** One flush at a time: successes arriving meanwhile wait for the next one, so batches grow with the load. */
  async #flushSuccesses(): Promise<void> {
    if (this.#flushing) return;
    this.#flushing = true;
    const batch = this.#successes.splice(0, 1000);
    try {
      // One JSON parameter rather than seven arrays: cheaper to build than pg's escaped array literals.
      await this.#services.db.query(SUCCESS_SQL, [
        JSON.stringify(
          batch.map((s) => ({
            id: s.row.id,
            token: s.row.claim_token,
            attempt: s.row.attempts + 1,
            at: s.at,
            status: s.status,
            latency: s.latencyMs,
            excerpt: s.excerpt,
          })),
        ),
      ]);
      for (const s of batch) s.done();
    } catch (error) {
      for (const s of batch) s.failed(error);
    } finally {
      this.#flushing = false;
      if (this.#successes.length > 0) void this.#flushSuccesses();
    }
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
