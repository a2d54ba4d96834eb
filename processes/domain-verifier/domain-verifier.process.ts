import type { Position } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { domainsDueForCheck } from '../../read-side/domains/queries.ts';
import { verifyDomain } from '../../write-side/domains/commands.ts';
import type { BackgroundProcess } from '../process.ts';

/** How many domains a run handled, and the position of its last event (wait for projections with it). */
export interface TickResult {
  count: number;
  position?: Position;
}

const BATCH = 50;

/**
 * The periodic DNS re-check: every domain not checked for DOMAIN_RECHECK_INTERVAL_MS is looked up again. A
 * verified record that vanished or changed yields DomainDnsChanged (the domain stops sending live until its
 * records are back); a pending domain whose records appeared becomes verified without a click on "verify".
 * Several processes may run it: a domain checked twice at once only adds a second, identical check event,
 * because DomainVerified and DomainDnsChanged are decided on the stream's latest state.
 */
export class DomainVerifierProcess implements BackgroundProcess {
  readonly name = 'domain-verifier';
  readonly #services: Services;
  #timer?: NodeJS.Timeout;
  #running?: Promise<TickResult>;

  constructor(services: Services) {
    this.#services = services;
  }

  start(): void {
    const every = Math.min(this.#services.config.DOMAIN_RECHECK_INTERVAL_MS, 60_000);
    this.#timer = setInterval(
      () => void this.tick().catch((err) => this.#services.log.error({ err }, 'domain re-check failed')),
      every,
    );
    this.#timer.unref();
  }

  /** Checks the domains that are due. Ticks never overlap. */
  tick(): Promise<TickResult> {
    this.#running ??= this.#checkDue().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #checkDue(): Promise<TickResult> {
    const { db, clock, config, log } = this.#services;
    const before = new Date(clock.now().getTime() - config.DOMAIN_RECHECK_INTERVAL_MS);
    const result: TickResult = { count: 0 };
    for (const d of await domainsDueForCheck(db, before, BATCH)) {
      try {
        const { position } = await verifyDomain(
          this.#services,
          { orgId: d.org_id, mode: d.mode, actor: 'system' },
          d.id,
          'periodic',
        );
        result.count++;
        if (position && (!result.position || position > result.position)) result.position = position;
      } catch (err) {
        // One domain's trouble (deleted meanwhile, name held by another organization) must not stop the rest.
        log.warn({ err, domainId: d.id }, 'domain re-check skipped');
      }
    }
    return result;
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running?.catch(() => {});
  }
}
