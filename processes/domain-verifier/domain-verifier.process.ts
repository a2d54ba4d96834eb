import type { Services } from '../../platform/services.ts';
import { domainsDueForCheck } from '../../read-side/domains/domains.queries.ts';
import { rotateDkimIfDue, verifyDomain } from '../../write-side/domains/domain.commands.ts';
import { forEachItem, ProcessManager } from '../process.ts';

const BATCH = 50;

/**
 * The periodic DNS re-check: every domain not checked for DOMAIN_RECHECK_INTERVAL_MS is looked up again. A
 * verified record that vanished or changed yields DomainDnsChanged (a required one stops live sending until it
 * is back); a pending domain whose records appeared becomes verified without a click on "verify". A
 * test-mode domain whose last check was simulated gets its simulation again, no look-up (`verifyDomain`).
 * A domain whose DKIM key is older than DKIM_ROTATE_AFTER_MS starts a rotation (`rotateDkimIfDue`); the re-checks
 * that follow switch to the new key once its record verifies and flag the old record removable after its grace.
 * Several processes may run it: a domain checked twice at once only adds a second, identical check event,
 * because DomainVerified and DomainDnsChanged are decided on the stream's latest state.
 */
export class DomainVerifierProcess extends ProcessManager {
  readonly #services: Services;

  constructor(services: Services) {
    super(services, {
      name: 'domain-verifier',
      everyMs: Math.min(services.config.DOMAIN_RECHECK_INTERVAL_MS, 60_000),
    });
    this.#services = services;
  }

  /** Checks the domains that are due; resolves with how many were checked. */
  protected async work(): Promise<number> {
    const { db, clock, config, log } = this.#services;
    const before = new Date(clock.now().getTime() - config.DOMAIN_RECHECK_INTERVAL_MS);
    return forEachItem(
      await domainsDueForCheck(db, before, BATCH),
      async (d) => {
        const meta = { orgId: d.org_id, mode: d.mode, actor: 'system' as const };
        await verifyDomain(this.#services, meta, d.id, 'periodic');
        // The automatic DKIM rotation rides on the re-check: a key older than DKIM_ROTATE_AFTER_MS is rotated.
        await rotateDkimIfDue(this.#services, meta, d.id);
      },
      // One domain's trouble (deleted meanwhile, name held by another organization) must not stop the rest.
      (err, d) => log.warn({ err, domainId: d.id }, 'domain re-check skipped'),
    );
  }
}
