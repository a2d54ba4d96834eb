import type { Position } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { domainsDueForPurge } from '../../read-side/domains/queries.ts';
import { purgeDomain } from '../../write-side/domains/commands.ts';
import type { BackgroundProcess } from '../process.ts';

/** How many domains a run handled, and the position of its last event (wait for projections with it). */
export interface TickResult {
  count: number;
  position?: Position;
}

const BATCH = 100;
const EVERY_MS = 10 * 60_000;

/**
 * Ends the grace period of soft-deleted domains: 30 days after deletion a domain is purged (gone from the
 * read model) and its name is free to be added again. Idempotent: purging twice appends nothing.
 */
export class RetentionProcess implements BackgroundProcess {
  readonly name = 'retention';
  readonly #services: Services;
  #timer?: NodeJS.Timeout;
  #running?: Promise<TickResult>;

  constructor(services: Services) {
    this.#services = services;
  }

  start(): void {
    this.#timer = setInterval(
      () => void this.tick().catch((err) => this.#services.log.error({ err }, 'retention run failed')),
      EVERY_MS,
    );
    this.#timer.unref();
  }

  /** Purges what is due now. */
  tick(): Promise<TickResult> {
    this.#running ??= this.#purgeDue().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #purgeDue(): Promise<TickResult> {
    const { db, clock, log } = this.#services;
    const result: TickResult = { count: 0 };
    for (const d of await domainsDueForPurge(db, clock.now(), BATCH)) {
      try {
        const { position } = await purgeDomain(
          this.#services,
          { orgId: d.org_id, mode: d.mode, actor: 'system' },
          d,
        );
        result.count++;
        if (position && (!result.position || position > result.position)) result.position = position;
      } catch (err) {
        log.warn({ err, domainId: d.id }, 'domain purge skipped');
      }
    }
    return result;
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running?.catch(() => {});
  }
}
