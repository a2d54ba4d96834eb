import type { Transaction } from '../../platform/db/database.ts';
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
  type NewDelivery,
  newDelivery,
  saveDeliveries,
} from './deliveries.ts';
import { EmailSummaries } from './email-summaries.ts';
import { EndpointSet } from './endpoints.ts';
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
 * same transaction that moves the checkpoint. A replayed batch inserts nothing twice (unique key).
 */
export class WebhookFanOut implements BackgroundProcess {
  readonly name = 'webhook-fanout';
  readonly #services: Services;
  readonly #summaries: EmailSummaries;
  readonly #replays: WebhookReplays;
  readonly #batchSize: number;
  #subscription?: Subscription;
  /** The checkpoint as of our last commit (subscription only); unknown after a stand-by or an error. */
  #position?: Position;
  #stopping = false;

  constructor(services: Services, options: { batchSize?: number } = {}) {
    this.#services = services;
    this.#batchSize = options.batchSize ?? 1000;
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
        batchSize: this.#batchSize,
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
    for (;;) {
      const last = events[events.length - 1].position;
      const next =
        events.length >= this.#batchSize && !this.#stopping
          ? this.#services.store.readAll({ from: last, limit: this.#batchSize })
          : null;
      next?.catch(() => {}); // awaited below unless the write fails first
      await this.#apply(events, before);
      this.#position = before = last;
      if (!next) return;
      events = await next;
      if (events.length === 0 || this.#stopping) return;
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
   * lacks) are read first, then one short transaction locks the checkpoint row (NOWAIT: another process is
   * fanning out, stand by), records the deliveries and moves the checkpoint. Only organizations with an endpoint
   * are looked at closely.
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
    const recorded = await this.#services.db.transaction(async (tx) => {
      let checkpoint: string;
      try {
        checkpoint = (
          await tx.query<{ position: string }>(
            'SELECT position FROM webhook_fanout_checkpoints WHERE name = $1 FOR UPDATE NOWAIT',
            [NAME],
          )
        ).rows[0].position;
      } catch (error: any) {
        if (error?.code === LOCK_NOT_AVAILABLE) throw new Standby();
        throw error;
      }
      // Another process moved on meanwhile: what was read above is stale; the subscription retries the batch.
      if (checkpoint !== before) throw new Standby();
      const recorded = await this.#fanOut(tx, relevant, endpoints);
      if (last > checkpoint) {
        await tx.query(
          `WITH moved AS (UPDATE webhook_fanout_checkpoints SET position = $2, updated_at = now() WHERE name = $1)
           SELECT CASE WHEN $3 THEN pg_notify($4, '') END`,
          [NAME, last, recorded > 0, DELIVERIES_CHANNEL],
        );
      }
      return recorded;
    });
    // Dispatchers of this process start at once; the NOTIFY wakes those of other processes.
    if (recorded > 0) deliveriesRecorded.emit('recorded');
  }

  async #fanOut(tx: Transaction, events: StoredEvent[], endpoints: EndpointSet): Promise<number> {
    const now = this.#services.clock.now();
    let pending: NewDelivery[] = [];
    let recorded = 0;
    const flush = async () => {
      recorded += await saveDeliveries(tx, pending, now, 'insert');
      pending = [];
    };
    for (const event of events) {
      if (isWebhookEvent(event)) {
        await flush(); // a retry request may concern a delivery recorded earlier in this batch
        await endpoints.apply(tx, event);
        if (event.type === 'WebhookCreated' && event.data.active) {
          const endpoint = endpoints.get(event.data.webhookId)!;
          pending.push(newDelivery(endpoint, event, TEST_EVENT_TYPE, testEventData(endpoint.webhookId), now));
        }
        continue;
      }
      const type = PUBLIC_TYPE_OF[event.type];
      if (!type) continue;
      const targets = endpoints.matching(event.metadata.orgId, event.metadata.mode, type);
      if (targets.length === 0) continue;
      const data = publicData(event, event.data.emailId ? this.#summaries.get(event.data.emailId) : null);
      if (!data) continue;
      for (const endpoint of targets) pending.push(newDelivery(endpoint, event, type, data, now));
    }
    await flush();
    return recorded;
  }
}
