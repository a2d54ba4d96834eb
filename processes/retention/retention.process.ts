import type { Services } from '../../platform/services.ts';
import { domainsDueForPurge } from '../../read-side/domains/queries.ts';
import { purgeDomain } from '../../write-side/domains/commands.ts';
import { forEachItem, Periodic, type TickResult } from '../periodic.ts';
import type { BackgroundProcess } from '../process.ts';

const BATCH = 100;
const EVERY_MS = 10 * 60_000;

/**
 * Ends the grace period of soft-deleted domains: 30 days after deletion a domain is purged (gone from the
 * read model) and its name is free to be added again. Idempotent: purging twice appends nothing.
 */
export class RetentionProcess implements BackgroundProcess {
  readonly name = 'retention';
  readonly #services: Services;
  readonly #periodic: Periodic;

  constructor(services: Services) {
    this.#services = services;
    this.#periodic = new Periodic({
      name: this.name,
      everyMs: EVERY_MS,
      run: () => this.#purgeDue(),
      log: services.log,
    });
  }

  start(): void {
    this.#periodic.start();
  }

  /** Purges what is due now. */
  tick(): Promise<TickResult> {
    return this.#periodic.tick();
  }

  async #purgeDue(): Promise<TickResult> {
    const { db, clock, log } = this.#services;
    return forEachItem(
      await domainsDueForPurge(db, clock.now(), BATCH),
      (d) => purgeDomain(this.#services, { orgId: d.org_id, mode: d.mode, actor: 'system' }, d),
      (err, d) => log.warn({ err, domainId: d.id }, 'domain purge skipped'),
    );
  }

  stop(): Promise<void> {
    return this.#periodic.stop();
  }
}
