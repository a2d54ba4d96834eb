import type { Services } from '../../platform/services.ts';
import { domainsDueForPurge } from '../../read-side/domains/domains.queries.ts';
import { receivedEmailsDueForPurge } from '../../read-side/received-emails/received-emails.queries.ts';
import { purgeDomain } from '../../write-side/domains/domain.commands.ts';
import { purgeReceivedEmail } from '../../write-side/received-emails/received-email.commands.ts';
import { forEachItem, ProcessManager } from '../process.ts';

const BATCH = 100;
const DAY_MS = 86_400_000;

/**
 * Ends what is kept for a time: 30 days after deletion a domain is purged (gone from the read model, its name
 * free again); INBOUND_RETENTION_DAYS after arrival a received email's raw message, content and attachments
 * are deleted (its metadata stays). Idempotent: purging twice appends nothing.
 */
export class RetentionProcess extends ProcessManager {
  readonly #services: Services;

  constructor(services: Services) {
    super(services, { name: 'retention', everyMs: 10 * 60_000 });
    this.#services = services;
  }

  /** Purges what is due now; resolves with how many domains and received emails were purged. */
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
    return domains + received;
  }
}
