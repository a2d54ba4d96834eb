import type { Services } from '../../platform/services.ts';
import { domainsDueForPurge } from '../../read-side/domains/domains.queries.ts';
import { purgeDomain } from '../../write-side/domains/domain.commands.ts';
import { forEachItem, ProcessManager } from '../process.ts';

const BATCH = 100;

/**
 * Ends the grace period of soft-deleted domains: 30 days after deletion a domain is purged (gone from the
 * read model) and its name is free to be added again. Idempotent: purging twice appends nothing.
 */
export class RetentionProcess extends ProcessManager {
  readonly #services: Services;

  constructor(services: Services) {
    super(services, { name: 'retention', everyMs: 10 * 60_000 });
    this.#services = services;
  }

  /** Purges what is due now; resolves with how many domains were purged. */
  protected async work(): Promise<number> {
    const { db, clock, log } = this.#services;
    return forEachItem(
      await domainsDueForPurge(db, clock.now(), BATCH),
      (d) => purgeDomain(this.#services, { orgId: d.org_id, mode: d.mode, actor: 'system' }, d),
      (err, d) => log.warn({ err, domainId: d.id }, 'domain purge skipped'),
    );
  }
}
