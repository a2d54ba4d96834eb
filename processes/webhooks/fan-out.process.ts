import type { Queryable } from '../../platform/db/database.ts';
import type { Position, StoredEvent, Subscription } from '../../platform/eventstore/types.ts';
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
import { batchUpdate, FAN_OUT_NAME, FanOutCheckpoint, ownedRow } from './fan-out-checkpoint.ts';
import { takerFor } from './hand-over.ts';
import { PUBLIC_TYPE_OF, publicData, testEventData } from './public-events.v1.ts';
import { WebhookReplays } from './replays.ts';

/** One fan-out at a time across processes (the checkpoint row's lock and lease); the others stand by. */
const LOCK_NOT_AVAILABLE = '55P03';

class Standby extends Error {}

const orgOf = (e: StoredEvent): string => (e.type === 'WebhookCreated' ? e.data.orgId : e.metadata.orgId);

/**
 * Webhook fan-out: reads the log from its own checkpoint, keeps each endpoint's subscription as of the event
 * in hand (webhook events pass through here in order too), and makes one delivery per (webhook, event): handed
 * to the dispatcher of this process unwritten when it has room, its row written with its outcome, or else
 * recorded for any dispatcher in the statement that ends the batch. The checkpoint moves past a batch once all of
 * its deliveries are written (fan-out-checkpoint.ts). A replayed batch writes nothing twice: a delivery's id is
 * derived from its webhook and event, and the primary key holds one row per id.
 */
export class WebhookFanOut implements BackgroundProcess {
  readonly name = 'webhook-fanout';
  readonly #services: Services;
  readonly #summaries: EmailSummaries;
  readonly #replays: WebhookReplays;
  readonly #checkpoint: FanOutCheckpoint;
  readonly #batchSize: number;
  /**
   * The subscription reads this much at a time, and #drain reads on in full batches: a backlog's first deliveries
   * are handed to the dispatcher after a short batch, so sending starts while the rest is fanned out.
   */
  readonly #firstBatchSize: number;
  #subscription?: Subscription;
  /** Where the next read starts: ahead of the checkpoint while outcomes are awaited; unknown after a stand-by. */
  #position?: Position;
  #stopping = false;

  constructor(services: Services, options: { batchSize?: number } = {}) {
    this.#services = services;
    this.#batchSize = options.batchSize ?? 1000;
    this.#firstBatchSize = Math.min(this.#batchSize, 200);
    this.#summaries = new EmailSummaries(services.store);
    this.#replays = new WebhookReplays(services, this.#summaries);
    this.#checkpoint = new FanOutCheckpoint(services.db, (error) =>
      services.log.error({ err: error }, 'webhook fan-out checkpoint failed to move'),
    );
  }

  start(): void {
    if (this.#subscription) return;
    this.#stopping = false;
    this.#subscription = this.#services.store.subscribe(
      {
        // Our own commits tell where the checkpoint is; the row is read only at start and after a stand-by.
        from: async () => (this.#position ??= await this.#checkpoint.load()),
        batchSize: this.#firstBatchSize,
      },
      async (events) => {
        try {
          await this.#drain(events, this.#position ?? (await this.#checkpoint.load()));
          await this.#replays.run();
        } catch (error) {
          this.#position = undefined;
          this.#checkpoint.reset();
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
    // Outcomes still awaited go on moving the checkpoint; a restart reads on from where it read.
    if (!this.#checkpoint.holding) this.#position = undefined;
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
      const from =
        this.#checkpoint.holding && this.#position !== undefined
          ? this.#position
          : await this.#checkpoint.load();
      const events = await this.#services.store.readAll({ from, limit: this.#batchSize });
      if (events.length > 0) {
        try {
          await this.#apply(events, from);
          this.#position = events[events.length - 1].position;
        } catch (error) {
          this.#checkpoint.reset();
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

  /**
   * One batch, read after `before`: endpoints (and email summaries the batch lacks) are read first, then the
   * deliveries are built, written or handed over, with the checkpoint's move (or, while outcomes are awaited,
   * the batch's place in the queue of batches that hold it back). Only organizations with an endpoint are looked
   * at closely.
   */
  async #apply(events: StoredEvent[], before: Position): Promise<void> {
    if (this.#checkpoint.committed === undefined) throw new Standby(); // another process moved it: read again
    const orgs = [...new Set(events.map(orgOf))];
    const endpoints = await EndpointSet.load(this.#services.db, orgs);
    const watched = new Set([
      ...endpoints.activeOrganizations(),
      ...events.filter(isWebhookEvent).map(orgOf),
    ]);
    const relevant = events.filter((e) => e.position > before && watched.has(orgOf(e)));
    await this.#summaries.load(relevant);
    const last = events[events.length - 1].position;
    const handOver = takerFor(this.#services)?.handOver();
    const batch = new DeliveryBatch(this.#services.clock.now(), handOver);
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

  /**
   * Events up to `sentUpTo` may have been handed over before a restart (or a stand-by): their deliveries that
   * have a row (an outcome, or a later attempt due) are left out, and only the others sent (again).
   */
  async #withoutSent(q: Queryable, batch: DeliveryBatch, before: Position): Promise<void> {
    const all = [...batch.pending, ...batch.handedOver];
    if (before >= this.#checkpoint.sentUpTo || all.length === 0) return;
    const { rows } = await q.query<{ id: string }>(
      'SELECT id FROM webhook_deliveries WHERE webhook_id = ANY($1) AND id = ANY($2)',
      [[...new Set(all.map((d) => ('webhookId' in d ? d.webhookId : d.webhook_id)))], all.map((d) => d.id)],
    );
    batch.without(new Set(rows.map((r) => r.id)));
  }

  async #inOneStatement(
    events: StoredEvent[],
    endpoints: EndpointSet,
    before: Position,
    last: Position,
    batch: DeliveryBatch,
  ): Promise<void> {
    for (const event of events) this.#deliveriesOf(event, endpoints, batch);
    await this.#withoutSent(this.#services.db, batch, before);
    const checkpoint = this.#checkpoint;
    await checkpoint.exclusive(async () => {
      const handedOver = batch.handedOver.length;
      const move = !checkpoint.holding && handedOver === 0;
      const rows = batch.pending;
      const [json, bodies] = rowParams(rows);
      const { rows: done } = await this.#services.db.query<{ owned: boolean; written: string[] | null }>(
        FAN_OUT_SQL,
        [
          json,
          batch.now,
          bodies,
          FAN_OUT_NAME,
          checkpoint.owner,
          checkpoint.committed,
          last,
          move,
          handedOver > 0,
          !move,
          rows.length > 0,
          DELIVERIES_CHANNEL,
          rows.length,
        ],
      );
      // Another process moved on or holds the row: what was read is stale; the subscription retries the batch.
      if (!done[0].owned) throw new Standby();
      // Null when every row was written; otherwise some existed already (their events fanned out before): the ids
      // that were written.
      batch.written(done[0].written ?? 'all');
      batch.recordedBy(checkpoint.written(last, handedOver, move));
    });
  }

  async #inTransaction(
    events: StoredEvent[],
    endpoints: EndpointSet,
    before: Position,
    last: Position,
    batch: DeliveryBatch,
  ): Promise<void> {
    const checkpoint = this.#checkpoint;
    await checkpoint.exclusive(async () => {
      const ended = await this.#services.db.transaction(async (tx) => {
        const { rows } = await tx.query(ownedRow('$1', '$2', '$3'), [
          FAN_OUT_NAME,
          checkpoint.owner,
          checkpoint.committed,
        ]);
        if (rows.length === 0) throw new Standby();
        const flush = async () => {
          if (batch.pending.length > 0) batch.written(await saveDeliveries(tx, batch.pending, batch.now));
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
        await this.#withoutSent(tx, batch, before);
        await flush();
        const handedOver = batch.handedOver.length;
        const move = !checkpoint.holding && handedOver === 0;
        await tx.query(
          `WITH moved AS (${batchUpdate('$1', '$2', '$3', '$4', '$5', '$6')})
           SELECT CASE WHEN $7 THEN pg_notify($8, '') END`,
          [
            FAN_OUT_NAME,
            checkpoint.owner,
            last,
            move,
            handedOver > 0,
            !move,
            batch.unclaimed > 0,
            DELIVERIES_CHANNEL,
          ],
        );
        return { handedOver, move };
      });
      batch.recordedBy(checkpoint.written(last, ended.handedOver, ended.move));
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
 * A batch without webhook events in one statement: lock the checkpoint row (NOWAIT) if it is still where this
 * fan-out left it and not another's, and only then insert the rows, end the batch on the row (batchUpdate) and
 * wake other processes' dispatchers.
 */
const FAN_OUT_SQL = `
WITH checkpoint AS (${ownedRow('$4', '$5', '$6')}
), written AS (
  ${insertDeliveries('$3', 'EXISTS (SELECT FROM checkpoint)')}
), moved AS (
  ${batchUpdate('$4', '$5', '$7', '$8', '$9', '$10')} AND EXISTS (SELECT FROM checkpoint)
)
SELECT EXISTS (SELECT FROM checkpoint) AS owned,
  CASE WHEN (SELECT count(*) FROM written) < $13 THEN (SELECT coalesce(array_agg(id), '{}') FROM written) END AS written,
  CASE WHEN $11 AND EXISTS (SELECT FROM checkpoint) THEN pg_notify($12, '') END`;
