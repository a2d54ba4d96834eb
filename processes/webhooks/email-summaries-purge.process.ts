import type { Services } from '../../platform/services.ts';
import { ProcessManager } from '../process.ts';
import { purgeEmailSummaries, SUMMARY_KEEP_DAYS } from './email-summaries.ts';

const DAY_MS = 86_400_000;

/**
 * Deletes the webhook payloads' email summaries (email-summaries.ts) recorded more than SUMMARY_KEEP_DAYS ago,
 * hourly: a later event's payload reads its email's summary from the stream again.
 */
export class EmailSummariesPurgeProcess extends ProcessManager {
  readonly #services: Services;

  constructor(services: Services) {
    super(services, { name: 'webhook-email-summaries-purge', everyMs: 60 * 60_000 });
    this.#services = services;
  }

  /** Resolves with how many summaries were deleted. */
  protected work(): Promise<number> {
    const { db, clock } = this.#services;
    return purgeEmailSummaries(
      db,
      new Date(clock.now().getTime() - SUMMARY_KEEP_DAYS * DAY_MS),
      this.stopping,
    );
  }
}
