import { type EmailEvent, emailStream } from '../../domain/emails/email.events.ts';
import { BoundedMap } from '../../platform/bounded-map.ts';
import type { EventStore, Stored, StoredEvent, SubscribeOptions } from '../../platform/eventstore/types.ts';
import { type EmailSummary, isEmailSourced, isFirstEmailEvent, summaryOf } from './public-events.v1.ts';

/**
 * from/to/subject/tags of emails, from each email's first event. That event never changes, so the cache never
 * goes stale; it only bounds its size. The fan-out meets first events in the log before the events that need
 * them (`remember`); only after a restart or an eviction is an email's stream read, as the batch is read
 * (`readingThrough`), before the fan-out's transaction opens: PGlite has one session, so nothing may read the
 * store from inside a transaction.
 */
export class EmailSummaries {
  readonly #store: EventStore;
  readonly #cache: BoundedMap<string, EmailSummary | null>;

  constructor(store: EventStore, max = 10_000) {
    this.#store = store;
    this.#cache = new BoundedMap(max);
  }

  get(emailId: string): EmailSummary | null {
    return this.#cache.get(emailId) ?? null;
  }

  /** Caches the summaries that first events in a batch carry. */
  remember(events: StoredEvent[]): void {
    for (const e of events) {
      if (!isFirstEmailEvent(e)) continue;
      const summary = summaryOf([e]);
      if (summary) this.#put(e.data.emailId, summary);
    }
  }

  #put(emailId: string, summary: EmailSummary | null) {
    this.#cache.set(emailId, summary);
  }

  /**
   * The store, its batches of the log coming with the summaries of their emails cached: those of organizations
   * that `watched` names (the others make no deliveries).
   */
  readingThrough(
    store: EventStore,
    watched: (events: StoredEvent[]) => Promise<(e: StoredEvent) => boolean>,
  ): EventStore {
    const prepare = async (events: StoredEvent[]) => {
      this.remember(events);
      const missing = events.filter(isEmailSourced).filter((e) => !this.#cache.has(e.data.emailId));
      if (missing.length > 0) await this.#load(missing.filter(await watched(missing)));
    };
    return new Proxy(store, {
      get(target, property) {
        if (property === 'readAll')
          return async (options: Parameters<EventStore['readAll']>[0]) => {
            const events = await target.readAll(options);
            await prepare(events);
            return events;
          };
        if (property === 'subscribe')
          return (options: SubscribeOptions, handle: (events: StoredEvent[]) => Promise<void>) =>
            target.subscribe(options, async (events) => {
              await prepare(events);
              await handle(events);
            });
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  async #load(events: Stored<EmailEvent>[]): Promise<void> {
    const missing = [...new Set(events.map((e) => e.data.emailId))].filter((id) => !this.#cache.has(id));
    for (let i = 0; i < missing.length; i += 20) {
      await Promise.all(
        missing.slice(i, i + 20).map(async (id) => {
          this.#put(id, summaryOf(await this.#store.readStream(emailStream(id))));
        }),
      );
    }
  }
}
