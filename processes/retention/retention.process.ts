import { blobKeysIn } from '../../platform/blob-store.ts';
import { stuckConsumers } from '../../platform/eventstore/parked-events.ts';
import type { Services } from '../../platform/services.ts';
import { domainsDueForPurge } from '../../read-side/domains/domains.queries.ts';
import { receivedEmailsDueForPurge } from '../../read-side/received-emails/received-emails.queries.ts';
import { purgeDomain } from '../../write-side/domains/domain.commands.ts';
import { purgeReceivedEmail } from '../../write-side/received-emails/received-email.commands.ts';
import { LogConsumer } from '../log-consumer.ts';
import { forEachItem, ProcessManager } from '../process.ts';
import { purgeEndedDeliveries } from './webhook-deliveries.ts';

const BATCH = 100;
const DAY_MS = 86_400_000;

/**
 * A blob no event has named this long after it was written is deleted. Far longer than any request or SMTP
 * transaction lasts, between a blob's write and its event's append.
 */
export const UNNAMED_BLOB_MS = DAY_MS;

/** Blobs deleted a run at most; the next run goes on. */
const SWEEP_BATCH = 1000;

/**
 * Ends what is kept for a time: 30 days after deletion a domain is purged (gone from the read model, its name
 * free again); INBOUND_RETENTION_DAYS after arrival a received email's raw message, content and attachments
 * are deleted (its metadata stays); WEBHOOK_DELIVERY_RETENTION_DAYS after it ended a webhook delivery that is not
 * pending is deleted with its attempts (webhook-deliveries.ts); a blob no event names UNNAMED_BLOB_MS after it was
 * written is deleted. Idempotent: purging twice appends nothing.
 */
export class RetentionProcess extends ProcessManager {
  readonly #services: Services;
  /**
   * Strikes the blobs events name off `blob_unnamed`. It reads the log when the retention runs, not live: a
   * batch of up to 500 events costs one transaction, where following the log would cost one per message.
   */
  readonly #naming: LogConsumer;

  constructor(services: Services) {
    super(services, { name: 'retention', everyMs: 10 * 60_000 });
    this.#services = services;
    this.#naming = new LogConsumer({ ...services, name: 'retention' }, (tx, events) => {
      const keys: string[] = [];
      for (const e of events) blobKeysIn(e.data, keys);
      return services.blobs.named(tx, keys);
    });
  }

  /**
   * Purges what is due now; resolves with how many domains, received emails, webhook deliveries and unnamed blobs
   * were purged.
   */
  protected async work(): Promise<number> {
    const { db, clock, log, config } = this.#services;
    const domains = await forEachItem(
      await domainsDueForPurge(db, clock.now(), BATCH),
      (d) => purgeDomain(this.#services, { orgId: d.org_id, mode: d.mode, actor: 'system' }, d),
      (err, d) => log.warn({ err, domainId: d.id }, 'domain purge skipped'),
    );
    const before = new Date(clock.now().getTime() - config.INBOUND_RETENTION_DAYS * DAY_MS);
    const received = await forEachItem(
      await receivedEmailsDueForPurge(db, before, BATCH),
      (r) => purgeReceivedEmail(this.#services, { orgId: r.org_id, mode: r.mode, actor: 'system' }, r.id),
      (err, r) => log.warn({ err, receivedEmailId: r.id }, 'received email purge skipped'),
    );
    return domains + received + (await this.#purgeWebhookDeliveries()) + (await this.#sweepUnnamedBlobs());
  }

  /** The webhook deliveries that ended more than WEBHOOK_DELIVERY_RETENTION_DAYS ago, in batches. */
  async #purgeWebhookDeliveries(): Promise<number> {
    const { db, clock, log, config } = this.#services;
    const endedBy = new Date(clock.now().getTime() - config.WEBHOOK_DELIVERY_RETENTION_DAYS * DAY_MS);
    return purgeEndedDeliveries(db, endedBy, this.stopping).catch((err) => {
      log.warn({ err }, 'webhook deliveries purge failed; the next run goes on');
      return 0;
    });
  }

  /**
   * Only once every event committed so far is applied, and none of this consumer's is parked: a blob is
   * deleted only when no event names it.
   */
  async #sweepUnnamedBlobs(): Promise<number> {
    const { db, clock, blobs } = this.#services;
    await this.#naming.retryParked();
    await this.#naming.catchUp();
    if ((await stuckConsumers(db)).some((c) => c.consumer === this.name)) return 0;
    return blobs.sweepUnnamed(clock.now().getTime() - UNNAMED_BLOB_MS, SWEEP_BATCH);
  }
}
