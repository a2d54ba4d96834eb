import type { StoredEvent } from '../../platform/eventstore/types.ts';
import type { EmailEvent } from '../../write-side/emails/events.ts';

/** About 32 MB of bodies; an email beyond it is read back from its stream as before. */
const MAX_CHARS = 16_000_000;
/** What an email costs beside its bodies (addresses, subject, headers, the event around them). */
const OVERHEAD_CHARS = 2_000;

/**
 * The `EmailQueued` events the delivery's log consumer has just read, by email id, oldest first, so the delivery
 * of a fresh email need not read its stream back. Only a hint: the append that starts the sending expects the
 * stream to be just this event, and when another process got there first the delivery reads the stream after all.
 */
export class RecentlyQueued {
  readonly #events = new Map<string, { event: StoredEvent; chars: number }>();
  #chars = 0;

  add(event: StoredEvent): void {
    const e = event as unknown as EmailEvent;
    if (e.type !== 'EmailQueued' || event.revision !== 0) return;
    const chars = (e.data.html?.length ?? 0) + (e.data.text?.length ?? 0) + OVERHEAD_CHARS;
    this.#drop(e.data.emailId);
    this.#events.set(e.data.emailId, { event, chars });
    this.#chars += chars;
    for (const [emailId] of this.#events) {
      if (this.#chars <= MAX_CHARS) break;
      this.#drop(emailId);
    }
  }

  /** The email's first event when it is still here; forgotten once taken. */
  take(emailId: string): StoredEvent | undefined {
    const entry = this.#events.get(emailId);
    this.#drop(emailId);
    return entry?.event;
  }

  #drop(emailId: string): void {
    const entry = this.#events.get(emailId);
    if (!entry) return;
    this.#events.delete(emailId);
    this.#chars -= entry.chars;
  }
}
