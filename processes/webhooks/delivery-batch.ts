import type { StoredEvent } from '../../platform/eventstore/types.ts';
import { type NewDelivery, newDelivery } from './deliveries.ts';
import type { Claimed } from './dispatcher.process.ts';
import type { Endpoint } from './endpoints.ts';
import type { HandOver } from './hand-over.ts';

/**
 * The deliveries of one fan-out batch, as they are built: those handed over unwritten to the dispatcher of this
 * process (when it has room), and the rows to write for any dispatcher.
 */
export class DeliveryBatch {
  readonly now: Date;
  readonly handOver: HandOver | undefined;
  /** To write, not written yet. */
  pending: NewDelivery[] = [];
  /** Handed over once the batch is committed. */
  handedOver: Claimed[] = [];
  /** Written: other dispatchers need waking. */
  unclaimed = 0;

  constructor(now: Date, handOver: HandOver | undefined) {
    this.now = now;
    this.handOver = handOver;
  }

  add(endpoint: Endpoint, source: StoredEvent, type: string, data: Record<string, unknown>): void {
    const delivery = newDelivery(endpoint, source, type, data);
    if (this.handOver?.reserve(endpoint.webhookId))
      this.handedOver.push(unwritten(delivery, endpoint, this.now));
    else this.pending.push(delivery);
  }

  /** Leaves out deliveries whose rows exist (their events fanned out before a restart). */
  without(existing: Set<string>): void {
    this.pending = this.pending.filter((d) => !existing.has(d.id));
    this.handedOver = this.handedOver.filter((d) => !existing.has(d.id));
  }

  /** The pending rows were written, all of them or only `ids` (a batch fanned out again after a crash). */
  written(ids: string[] | 'all'): void {
    this.unclaimed += ids === 'all' ? this.pending.length : ids.length;
    this.pending = [];
  }

  /** Each delivery handed over calls `recorded` once its outcome is written. */
  recordedBy(recorded: () => void): void {
    for (const d of this.handedOver) {
      d.unwritten!.recorded = () => {
        if (!d.unwritten) return;
        d.unwritten = undefined;
        recorded();
      };
    }
  }
}

/** A delivery handed over unwritten, as a claim would have returned it (the endpoint as of its event). */
const unwritten = (d: NewDelivery, endpoint: Endpoint, now: Date): Claimed => ({
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
  claim_token: null,
  claimedAt: now.getTime(),
  unwritten: { sourceKey: d.sourceKey, createdAt: now, recorded: () => {} },
});
