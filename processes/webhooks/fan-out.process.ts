import {
  type Position,
  START,
  type StoredEvent,
  type Subscription,
} from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { TEST_EVENT_TYPE } from '../../write-side/webhooks/event-types.ts';
import { isWebhookEvent } from '../../write-side/webhooks/events.ts';
import type { BackgroundProcess } from '../process.ts';
import {
  DELIVERIES_CHANNEL,
  deliveriesRecorded,
  insertDeliveries,
  rowParams,
  saveDeliveries,
} from './deliveries.ts';
import { DeliveryBatch } from './delivery-batch.ts';
import { EmailSummaries } from './email-summaries.ts';
import { EndpointSet } from './endpoints.ts';
import { takerFor } from './hand-over.ts';
import { PUBLIC_TYPE_OF, publicData, testEventData } from './public-events.v1.ts';
import { WebhookReplays } from './replays.ts';

const NAME = 'webhook_fanout';
/** One fan-out at a time across processes (the checkpoint row's lock); the others stand by. */
const LOCK_NOT_AVAILABLE = '55P03';

class Standby extends Error {}

const orgOf = (e: StoredEvent): string => (e.type === 'WebhookCreated' ? e.data.orgId : e.metadata.orgId);

/**
 * Webhook fan-out: reads the log from its own checkpoint, keeps each endpoint's subscription as of the event
 * in hand (webhook events pass through here in order too), and records one delivery per (webhook, event) in the
 * same transaction that moves the checkpoint. A replayed batch inserts nothing twice: a delivery's id is derived
 * from its webhook and event, and the primary key holds one row per id.
 */
export class WebhookFanOut implements BackgroundProcess {
  readonly name = 'webhook-fanout';
  readonly #services: Services;
  readonly #summaries: EmailSummaries;
  readonly #replays: WebhookReplays;
  readonly #batchSize: number;
  /**
   * The subscription reads this much at a time, and #drain reads on in full batches: a backlog's first deliveries
   * are handed to the dispatcher after a short batch, so sending starts while the rest is fanned out.
   */
  readonly #firstBatchSize: number;
  #subscription?: Subscription;
  /** The checkpoint as of our last commit (subscription only); unknown after a stand-by or an error. */
  #position?: Position;
  #stopping = false;

  constructor(services: Services, options: { batchSize?: number } = {}) {
    this.#services = services;
    this.#batchSize = options.batchSize ?? 1000;
    this.#firstBatchSize = Math.min(this.#batchSize, 200);
    this.#summaries = new EmailSummaries(services.store);
    this.#replays = new WebhookReplays(services, this.#summaries);
  }

  start(): void {
    if (this.#subscription) return;
    this.#stopping = false;
    this.#subscription = this.#services.store.subscribe(
      {
        // Our own commits tell where the checkpoint is; the row is read only at start and after a stand-by.
        from: async () => (this.#position ??= await this.#checkpoint()),
        batchSize: this.#firstBatchSize,
      },
      async (events) => {
        try {
          await this.#drain(events, this.#position ?? (await this.#checkpoint()));
          await this.#replays.run();
        } catch (error) {
          this.#position = undefined;
          if (!(error instanceof Standby))
            this.#services.log.error({ err: error }, 'webhook fan-out batch failed');
          throw error;
        }
      },
    );
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#subscription?.stop();
    this.#subscription = undefined;
    this.#position = undefined;
  }

  /**
   * Works through a backlog batch after batch, reading the next batch while the current one is written, so the
   * log read and the write overlap. Returns at the end of the backlog (a short batch), on stop, or on an error.
   */
  async #drain(first: StoredEvent[], from: Position): Promise<void> {
    let events = first;
    let before = from;
    let full = first.length >= this.#firstBatchSize;
    for (;;) {
      const last = events[events.length - 1].position;
      const next =
        full && !this.#stopping ? this.#services.store.readAll({ from: last, limit: this.#batchSize }) : null;
      next?.catch(() => {}); // awaited below unless the write fails first
      await this.#apply(events, before);
      this.#position = before = last;
      if (!next) return;
      events = await next;
      if (events.length === 0 || this.#stopping) return;
      full = events.length >= this.#batchSize;
    }
  }

  /**
   * Fans out everything readable now, then works pending replays (tests and tools drive it this way). With
   * `upTo`, keeps reading until that position is fanned out: events appear in the log only once every older
   * transaction has finished, so "committed" can run a moment ahead of "readable".
   */
  async runOnce(upTo?: Position, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const from = await this.#checkpoint();
      const events = await this.#services.store.readAll({ from, limit: this.#batchSize });
      if (events.length > 0) {
        try {
          await this.#apply(events, from);
        } catch (error) {
          if (!(error instanceof Standby) || Date.now() > deadline) throw error;
          await new Promise((r) => setTimeout(r, 10));
        }
        continue;
      }
      if (upTo === undefined || from >= upTo) break;
      if (Date.now() > deadline)
        throw new Error(`webhook fan-out did not reach ${upTo} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
    await this.#replays.run();
  }

  async #checkpoint(): Promise<Position> {
    const { rows } = await this.#services.db.query<{ position: string }>(
      'SELECT position FROM webhook_fanout_checkpoints WHERE name = $1',
      [NAME],
    );
    return rows[0]?.position ?? START;
  }

  /**
   * One batch, read after `before` (the checkpoint it was read from): endpoints (and email summaries the batch
   * lacks) are read first, then the deliveries are recorded with the checkpoint's move, the checkpoint row locked
   * (NOWAIT: another process is fanning out, stand by). Only organizations with an endpoint are looked at closely.
   */
  async #apply(events: StoredEvent[], before: Position): Promise<void> {
    const orgs = [...new Set(events.map(orgOf))];
    const endpoints = await EndpointSet.load(this.#services.db, orgs);
    const watched = new Set([
      ...endpoints.activeOrganizations(),
      ...events.filter(isWebhookEvent).map(orgOf),
    ]);
    const relevant = events.filter((e) => e.position > before && watched.has(orgOf(e)));
    await this.#summaries.load(relevant);
    const last = events[events.length - 1].position;
    const now = this.#services.clock.now();
    const handOver = takerFor(this.#services)?.handOver(now);
    const batch = new DeliveryBatch(now, handOver);
    try {
      // Webhook events change endpoints (and deliveries) on the way: a transaction. Other batches, nearly all of
      // them: one statement, a single round trip.
      if (relevant.some(isWebhookEvent)) await this.#inTransaction(relevant, endpoints, before, last, batch);
      else await this.#inOneStatement(relevant, endpoints, before, last, batch);
    } catch (error: any) {
      handOver?.settle(null);
      throw error?.code === LOCK_NOT_AVAILABLE ? new Standby() : error;
    }
    handOver?.settle(batch.handedOver);
    // Dispatchers of this process start at once; the NOTIFY wakes those of other processes.
    if (batch.unclaimed > 0) deliveriesRecorded.emit('recorded');
  }

  async #inOneStatement(
    events: StoredEvent[],
    endpoints: EndpointSet,
    before: Position,
    last: Position,
    batch: DeliveryBatch,
  ): Promise<void> {
    for (const event of events) this.#deliveriesOf(event, endpoints, batch);
    const rows = batch.pending;
    const { db } = this.#services;
    const [json, bodies] = rowParams(rows);
    const { rows: done } = await db.query<{ checkpoint: string; written: string[] | null }>(FAN_OUT_SQL, [
      json,
      batch.now,
      batch.handOver?.leasedUntil ?? null,
      NAME,
      before,
      last,
      rows.some((d) => !d.claimToken),
      DELIVERIES_CHANNEL,
      rows.length,
      bodies,
    ]);
    // Another process moved on meanwhile: what was read is stale; the subscription retries the batch.
    if (done[0].checkpoint !== before) throw new Standby();
    // Null when every row was written; otherwise some existed already (their events fanned out before): the ids
    // that were written.
    batch.written(done[0].written ?? 'all');
  }

  async #inTransaction(
    events: StoredEvent[],
    endpoints: EndpointSet,
    before: Position,
    last: Position,
    batch: DeliveryBatch,
  ): Promise<void> {
    await this.#services.db.transaction(async (tx) => {
      const { rows } = await tx.query<{ position: string }>(
        'SELECT position FROM webhook_fanout_checkpoints WHERE name = $1 FOR UPDATE NOWAIT',
        [NAME],
      );
      const checkpoint = rows[0].position;
      if (checkpoint !== before) throw new Standby();
      const flush = async () => {
        if (batch.pending.length === 0) return;
        batch.written(
          await saveDeliveries(tx, batch.pending, batch.now, batch.handOver?.leasedUntil ?? null),
        );
      };
      for (const event of events) {
        if (isWebhookEvent(event)) {
          await flush(); // a retry request may concern a delivery recorded earlier in this batch
          await endpoints.apply(tx, event);
          if (event.type === 'WebhookCreated' && event.data.active) {
            const endpoint = endpoints.get(event.data.webhookId)!;
            batch.add(endpoint, event, TEST_EVENT_TYPE, testEventData(endpoint.webhookId));
          }
        } else this.#deliveriesOf(event, endpoints, batch);
      }
      await flush();
      if (last > checkpoint) {
        await tx.query(
          `WITH moved AS (UPDATE webhook_fanout_checkpoints SET position = $2, updated_at = now() WHERE name = $1)
           SELECT CASE WHEN $3 THEN pg_notify($4, '') END`,
          [NAME, last, batch.unclaimed > 0, DELIVERIES_CHANNEL],
        );
      }
    });
  }

  /** One delivery of a (non-webhook) event per matching endpoint. */
  #deliveriesOf(event: StoredEvent, endpoints: EndpointSet, batch: DeliveryBatch): void {
    const type = PUBLIC_TYPE_OF[event.type];
    if (!type) return;
    const targets = endpoints.matching(event.metadata.orgId, event.metadata.mode, type);
    if (targets.length === 0) return;
    const data = publicData(event, event.data.emailId ? this.#summaries.get(event.data.emailId) : null);
    if (!data) return;
    for (const endpoint of targets) batch.add(endpoint, event, type, data);
  }
}

/**
 * A batch without webhook events in one statement: lock the checkpoint row (NOWAIT), and only if it is still where
 * the batch was read from, insert the deliveries, move the checkpoint and wake other processes' dispatchers.
 */
const FAN_OUT_SQL = `
WITH checkpoint AS (
  SELECT position FROM webhook_fanout_checkpoints WHERE name = $4 FOR UPDATE NOWAIT
), written AS (
  ${insertDeliveries('$10', '(SELECT position FROM checkpoint) = $5')}
), moved AS (
  UPDATE webhook_fanout_checkpoints SET position = $6, updated_at = now()
  WHERE name = $4 AND (SELECT position FROM checkpoint) = $5 AND $6 > $5
)
SELECT (SELECT position FROM checkpoint) AS checkpoint,
  CASE WHEN (SELECT count(*) FROM written) < $9 THEN (SELECT coalesce(array_agg(id), '{}') FROM written) END AS written,
  CASE WHEN $7 AND (SELECT position FROM checkpoint) = $5 THEN pg_notify($8, '') END`;
