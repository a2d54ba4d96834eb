import { BoundedMap } from '../../platform/bounded-map.ts';
import type { StoredEvent } from '../../platform/eventstore/types.ts';

/** Streams held at most: a job claimed by another process leaves its stream here until it is pushed out. */
const HELD = 5000;

/**
 * The streams of emails just queued, as the delivery's consumer read them from the log (an `EmailQueued` at
 * revision 0, the whole stream at acceptance): the first look at such an email takes its stream from here instead
 * of reading it again from the store, once. A stream moved on since (another process's attempt or outcome) is no
 * danger: the look's first append expects the revision it saw, fails, and the command runner reads the stream again
 * before anything is sent (record before send, docs/mta.md).
 */
export class JustQueued {
  readonly #streams = new BoundedMap<string, StoredEvent[]>(HELD);

  note(events: StoredEvent[]): void {
    for (const e of events)
      if (e.type === 'EmailQueued' && e.revision === 0) this.#streams.set(e.streamId, [e]);
  }

  /** The stream as the log brought it, once; undefined when it is not held (read it from the store). */
  take(streamId: string): StoredEvent[] | undefined {
    const stream = this.#streams.get(streamId);
    this.#streams.delete(streamId);
    return stream;
  }
}
