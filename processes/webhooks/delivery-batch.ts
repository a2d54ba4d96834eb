import type { StoredEvent } from '../../platform/eventstore/types.ts';
import { type NewDelivery, newDelivery } from './deliveries.ts';
import type { Claimed } from './dispatcher.process.ts';
import type { Endpoint } from './endpoints.ts';
import type { HandOver } from './hand-over.ts';

/**
 * The deliveries of one fan-out batch, as they are built and written: those claimed at insert for the dispatcher
 * of this process (when it has room), and how many are left for any dispatcher.
 */
export class DeliveryBatch {
  readonly now: Date;
  readonly handOver: HandOver | undefined;
  /** Built, not written yet. */
  pending: NewDelivery[] = [];
  #claimed: Claimed[] = [];
  /** Written claimed for this process's dispatcher: sent once the batch is committed. */
  readonly handedOver: Claimed[] = [];
  /** Written unclaimed: other dispatchers need waking. */
  unclaimed = 0;

  constructor(now: Date, handOver: HandOver | undefined) {
    this.now = now;
    this.handOver = handOver;
  }

  add(endpoint: Endpoint, source: StoredEvent, type: string, data: Record<string, unknown>): void {
    const delivery = newDelivery(endpoint, source, type, data);
    if (this.handOver?.reserve(endpoint.webhookId)) {
      delivery.claimToken = this.handOver.token;
      this.#claimed.push(claimedFor(delivery, endpoint, this.now));
    }
    this.pending.push(delivery);
  }

  /** The pending rows were written, all of them or only `ids` (a batch fanned out again after a crash). */
  written(ids: string[] | 'all'): void {
    const fresh = ids === 'all' ? null : new Set(ids);
    for (const d of this.pending) if (!d.claimToken && (!fresh || fresh.has(d.id))) this.unclaimed++;
    for (const row of this.#claimed) if (!fresh || fresh.has(row.id)) this.handedOver.push(row);
    this.pending = [];
    this.#claimed = [];
  }
}

/** A delivery claimed at insert, as a claim would have returned it (the endpoint as of its event). */
const claimedFor = (d: NewDelivery, endpoint: Endpoint, now: Date): Claimed => ({
  id: d.id,
  webhook_id: d.webhookId,
  org_id: d.orgId,
  mode: d.mode as Claimed['mode'],
  event_type: d.eventType,
  body: d.body,
  attempts: 0,
  url: endpoint.url,
  sealed_secret: endpoint.sealedSecret,
  previous_sealed_secret: endpoint.previousSealedSecret,
  previous_valid_until: endpoint.previousValidUntil,
  claim_token: d.claimToken!,
  claimedAt: now.getTime(),
});
