import type { StoredEvent } from '../../platform/eventstore/types.ts';

/** Streams held at most: a job claimed by another process leaves its stream here until it is pushed out. */
const HELD = 5000;
/** The bodies' characters held at most (an email's html and text, up to 10 MiB each, are the bulk of its event). */
const HELD_CHARS = 8 * 1024 * 1024;
/** A stream held longer is dropped: a look that comes later is not the first look after acceptance. */
const HELD_MS = 60_000;

/** What an email's event holds in memory, in characters: its bodies and a little for the rest. */
const charsOf = (e: StoredEvent) => {
  const d = e.data as { html?: string | null; text?: string | null };
  return (d.html?.length ?? 0) + (d.text?.length ?? 0) + 1024;
};

/**
 * The streams of emails just queued, as the delivery's consumer read them from the log (an `EmailQueued` at
 * revision 0, the whole stream at acceptance): the first look at such an email takes its stream from here instead
 * of reading it again from the store, once. A stream moved on since (another process's attempt or outcome) is no
 * danger: the look's first append expects the revision it saw, fails, and the command runner reads the stream again
 * before anything is sent (record before send, docs/mta.md). Only the emails this process may look at are noted
 * (those with a delivery job), and they are held within a count, a size and an age: a look that never comes (the
 * job claimed by another process) costs memory for a minute at most. A give-up's look does not use its copy: it
 * chooses whom to bounce before any append (delivery.process.ts).
 */
export class JustQueued {
  /** By stream, oldest first. */
  readonly #streams = new Map<string, { events: StoredEvent[]; chars: number; at: number }>();
  #chars = 0;
  readonly #now: () => number;

  /** `now`: the time in ms the streams age by. */
  constructor({ now = Date.now }: { now?: () => number } = {}) {
    this.#now = now;
  }

  note(events: StoredEvent[]): void {
    const now = this.#now();
    for (const e of events) {
      if (e.type !== 'EmailQueued' || e.revision !== 0) continue;
      const chars = charsOf(e);
      if (chars > HELD_CHARS) continue;
      this.#drop(e.streamId);
      this.#streams.set(e.streamId, { events: [e], chars, at: now });
      this.#chars += chars;
    }
    for (const [streamId, held] of this.#streams) {
      if (this.#streams.size <= HELD && this.#chars <= HELD_CHARS && held.at > now - HELD_MS) break;
      this.#drop(streamId);
    }
  }

  /** The stream as the log brought it, once; undefined when it is not held (read it from the store). */
  take(streamId: string): StoredEvent[] | undefined {
    const held = this.#streams.get(streamId);
    this.#drop(streamId);
    return held && held.at > this.#now() - HELD_MS ? held.events : undefined;
  }

  #drop(streamId: string): void {
    const held = this.#streams.get(streamId);
    if (!held) return;
    this.#streams.delete(streamId);
    this.#chars -= held.chars;
  }
}
