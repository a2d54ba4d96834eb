import { TEST_EVENT_TYPE } from '../../domain/webhooks/event-types.ts';
import { isWebhookEvent, type WebhookEvent } from '../../domain/webhooks/webhook.events.ts';
import type { Transaction } from '../../platform/db/database.ts';
import { isOneOf, type Stored, type StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { LogConsumer } from '../log-consumer.ts';
import type { BackgroundProcess } from '../process.ts';
import { insertDeliveries, type NewDelivery, newDelivery, wakeDispatchersAtCommit } from './deliveries.ts';
import { EmailSummaries } from './email-summaries.ts';
import { EndpointSet } from './endpoints.ts';
import { isEmailSourced, PUBLIC_TYPE_OF, publicData, testEventData } from './public-events.v1.ts';
import { WebhookReplays } from './replays.ts';

export const FAN_OUT_NAME = 'webhook-fanout';

type WebhookCreated = Extract<WebhookEvent, { type: 'WebhookCreated' }>;
type ReplayRequested = Extract<WebhookEvent, { type: 'WebhookReplayRequested' }>;

/** A replay's due row, due at its request; it reaches up to the request's position. */
const replayOf = ({ data, position }: Stored<ReplayRequested>) => ({
  id: data.replayId,
  webhook_id: data.webhookId,
  since: data.since,
  until: data.until,
  up_to: position,
  requested_at: data.requestedAt,
});

/** A created webhook names its organization in its data; every other event in its metadata. */
const orgOf = (e: StoredEvent): string =>
  isOneOf<WebhookCreated>(e, ['WebhookCreated']) ? e.data.orgId : e.metadata.orgId;

/**
 * Of these events, those that can lead to deliveries and so need their email's summary: of organizations with an
 * active endpoint (`endpoints`, loaded for them), or with webhook events among them.
 */
function watchedBy(endpoints: EndpointSet, events: StoredEvent[]): (e: StoredEvent) => boolean {
  const orgs = new Set([...endpoints.activeOrganizations(), ...events.filter(isWebhookEvent).map(orgOf)]);
  return (e) => orgs.has(orgOf(e));
}

/** How often replays whose claim ran out (a crashed process's) are looked for, besides after each batch. */
const REPLAY_POLL_MS = 30_000;

/**
 * Webhook fan-out: a consumer of the log (LogConsumer) that keeps each endpoint's subscription as of the event in
 * hand (webhook events pass through here in order too) and records one delivery per (webhook, event) in the
 * transaction that moves its checkpoint: the deliveries table is the outbox the dispatcher claims from. A batch
 * applied again (after a crash, or by another process) writes nothing twice: a delivery's id is derived from its
 * webhook and event, and the primary key holds one row per id. Replays requested on the way become due rows
 * (replays.ts), worked after each batch.
 */
export class WebhookFanOut implements BackgroundProcess {
  readonly name = FAN_OUT_NAME;
  readonly #services: Services;
  readonly #summaries: EmailSummaries;
  readonly #consumer: LogConsumer;
  readonly #replays: WebhookReplays;
  #replaying?: Promise<number>;
  #timer?: NodeJS.Timeout;
  /**
   * Organizations with an endpoint not deleted, as of the checkpoint of the last batch applied here; undefined
   * until a batch loads it, and again once a batch with webhook events has gone by (applied here or elsewhere:
   * `prepare` sees every batch not skipped). Only their events, and webhook events, can lead to deliveries or
   * need their email's summary recorded: batches of other events are skipped. An endpoint created later reads
   * the summaries it lacks from the emails' streams.
   */
  #orgs?: Set<string>;
  #stopping = new AbortController();

  constructor(services: Services) {
    this.#services = services;
    this.#summaries = new EmailSummaries(services.store, () => services.clock.now());
    this.#consumer = new LogConsumer(
      {
        name: FAN_OUT_NAME,
        db: services.db,
        store: services.store,
        log: services.log,
        // The summaries the batch lacks are read from the emails' streams before its transaction opens.
        prepare: async (events) => {
          if (events.some(isWebhookEvent)) this.#orgs = undefined;
          const endpoints = await EndpointSet.load(services.db, [...new Set(events.map(orgOf))]);
          await this.#summaries.of(services.db, events, watchedBy(endpoints, events));
        },
        acts: (e) => this.#orgs === undefined || isWebhookEvent(e) || this.#orgs.has(orgOf(e)),
      },
      (tx, events) => this.#apply(tx, events),
    );
    this.#replays = new WebhookReplays(services, this.#summaries);
  }

  start(): void {
    this.#consumer.start(() => void this.#replay());
    this.#timer ??= setInterval(() => void this.#replay(), REPLAY_POLL_MS).unref();
    void this.#replay();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#stopping.abort();
    await this.#consumer.stop();
    await this.#replaying;
    this.#stopping = new AbortController();
  }

  /**
   * Fans out everything committed so far, then works the replays due (tests and tools drive it this way); resolves
   * with how many deliveries the replays recorded or reset.
   */
  async runOnce(): Promise<number> {
    await this.#consumer.catchUp();
    return this.#replay();
  }

  /** Works the replays due; a call while they run shares the run (it goes on until none is left). */
  #replay(): Promise<number> {
    this.#replaying ??= this.#replays
      .run(this.#stopping.signal)
      .catch((err) => {
        this.#services.log.error({ err }, 'webhook replay failed');
        return 0;
      })
      .finally(() => {
        this.#replaying = undefined;
      });
    return this.#replaying;
  }

  /**
   * One batch, in the consumer's transaction: webhook events change the endpoints on the way (and may concern
   * deliveries recorded earlier in the batch, so those are written first); every other event makes a delivery
   * for each matching endpoint. Wakes dispatchers when it recorded any.
   */
  async #apply(tx: Transaction, events: StoredEvent[]): Promise<void> {
    const endpoints = await EndpointSet.load(tx, [...new Set(events.map(orgOf))]);
    await this.#summaries.record(tx, events);
    // Only a summary purged since `prepare` is read from its stream here.
    const summaries = await this.#summaries.of(tx, events, watchedBy(endpoints, events));
    const now = this.#services.clock.now();
    let pending: NewDelivery[] = [];
    let recorded = 0;
    const flush = async () => {
      recorded += (await insertDeliveries(tx, pending, now)).length;
      pending = [];
    };
    for (const event of events) {
      if (isWebhookEvent(event)) {
        await flush();
        await endpoints.apply(tx, event);
        if (isOneOf<ReplayRequested>(event, ['WebhookReplayRequested']))
          await this.#replays.due.add(tx, [replayOf(event)]);
        if (event.type === 'WebhookCreated' && event.data.active) {
          const endpoint = endpoints.get(event.data.webhookId)!;
          pending.push(newDelivery(endpoint, event, TEST_EVENT_TYPE, testEventData(endpoint.webhookId)));
        }
        continue;
      }
      const type = PUBLIC_TYPE_OF[event.type];
      if (!type) continue;
      const targets = endpoints.matching(event.metadata.orgId, event.metadata.mode, type);
      if (targets.length === 0) continue;
      const data = publicData(
        event,
        isEmailSourced(event) ? (summaries.get(event.data.emailId) ?? null) : null,
      );
      if (!data) continue;
      for (const endpoint of targets) pending.push(newDelivery(endpoint, event, type, data));
    }
    await flush();
    if (recorded > 0) wakeDispatchersAtCommit(tx);
    if (this.#orgs === undefined || events.some(isWebhookEvent)) this.#orgs = await this.#organizations(tx);
  }

  /** The organizations with an endpoint not deleted, as the batch in hand leaves them. */
  async #organizations(tx: Transaction): Promise<Set<string>> {
    const { rows } = await tx.query<{ org_id: string }>(
      'SELECT DISTINCT org_id FROM webhook_endpoints WHERE NOT deleted',
    );
    return new Set(rows.map((r) => r.org_id));
  }
}
