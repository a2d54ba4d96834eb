import type { EventStore, StoredEvent } from '../../platform/eventstore/types.ts';
import { emailStream } from '../../write-side/emails/events.ts';
import { type EmailSummary, isEmailSourced, summaryOf } from './public-events.v1.ts';

/**
 * from/to/subject/tags of emails, from each email's first event. That event never changes, so the cache never
 * goes stale; it only bounds its size. The fan-out meets first events in the log before the events that need
 * them (`remember`); only after a restart or an eviction is an email's stream read, before the fan-out
 * transaction opens (PGlite has one connection: nothing may read the store from inside a transaction).
 */
export class EmailSummaries {
  readonly #store: EventStore;
  readonly #cache = new Map<string, EmailSummary | null>();
  readonly #max: number;

  constructor(store: EventStore, max = 10_000) {
    this.#store = store;
    this.#max = max;
  }

  get(emailId: string): EmailSummary | null {
    return this.#cache.get(emailId) ?? null;
  }

  /** Caches the summaries that first events in a batch carry. */
  remember(events: StoredEvent[]): void {
    for (const e of events) {
      if (e.type !== 'EmailQueued' && e.type !== 'EmailScheduled') continue;
      const summary = summaryOf([e]);
      if (summary) this.#put(e.data.emailId, summary);
    }
  }

  #put(emailId: string, summary: EmailSummary | null) {
    if (this.#cache.size >= this.#max) this.#cache.delete(this.#cache.keys().next().value!);
    this.#cache.set(emailId, summary);
  }

  async load(events: StoredEvent[]): Promise<void> {
    this.remember(events);
    const missing = [...new Set(events.filter(isEmailSourced).map((e) => e.data.emailId as string))].filter(
      (id) => !this.#cache.has(id),
    );
    for (let i = 0; i < missing.length; i += 20) {
      await Promise.all(
        missing.slice(i, i + 20).map(async (id) => {
          this.#put(id, summaryOf(await this.#store.readStream(emailStream(id))));
        }),
      );
    }
  }
}
