/** The first retry of an owed release comes this soon; each later one waits twice as long, up to the cap. */
const FIRST_RETRY_MS = 100;
const RETRY_CAP_MS = 1000;

interface Owed {
  write: () => Promise<unknown>;
  timer?: NodeJS.Timeout;
}

/**
 * The releases of Idempotency-Keys this process owes: an attempt ended without a final answer (the database went
 * away under it) and its release could not be written then. While it is unwritten the key stays in flight and
 * every retry is told 409, so it is written as soon as the database answers again: first of all by the next
 * request under that key in this process (`settle`, before it claims the key), and meanwhile in the background,
 * every second at most, for the retries that reach another process. Past the attempt's lease it is given up:
 * the claim may be taken over then anyway.
 */
export class OwedReleases {
  readonly #owed = new Map<string, Owed>();

  /** `write` releases `stream`'s claim of an attempt; it is tried until it succeeds or `untilMs` (epoch ms) passes. */
  owe(stream: string, write: () => Promise<unknown>, untilMs: number): void {
    this.#forget(stream);
    const owed: Owed = { write };
    this.#owed.set(stream, owed);
    const retry = (delay: number) => {
      owed.timer = setTimeout(() => {
        if (this.#owed.get(stream) !== owed) return;
        write().then(
          () => this.#owed.get(stream) === owed && this.#forget(stream),
          () => {
            if (Date.now() + delay > untilMs) this.#owed.get(stream) === owed && this.#forget(stream);
            else retry(Math.min(RETRY_CAP_MS, delay * 2));
          },
        );
      }, delay);
      owed.timer.unref();
    };
    retry(FIRST_RETRY_MS);
  }

  /** Writes the release this process owes for `stream`, if any; throws (the database's error) when it cannot. */
  async settle(stream: string): Promise<void> {
    const owed = this.#owed.get(stream);
    if (!owed) return;
    await owed.write();
    if (this.#owed.get(stream) === owed) this.#forget(stream);
  }

  #forget(stream: string) {
    clearTimeout(this.#owed.get(stream)?.timer);
    this.#owed.delete(stream);
  }
}
