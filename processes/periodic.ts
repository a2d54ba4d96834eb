import type { Position } from '../platform/eventstore/types.ts';
import type { Logger } from '../platform/logger.ts';

/** How many items a run handled, and the position of its last event (wait for projections with it). */
export interface TickResult {
  count: number;
  position?: Position;
}

/**
 * A process that works off what is due on a timer. Runs never overlap: a tick during a run shares it. Tests
 * call `tick()` with a ManualClock instead of waiting for the timer.
 */
export class Periodic {
  readonly #name: string;
  readonly #everyMs: number;
  readonly #run: () => Promise<TickResult>;
  readonly #log: Logger;
  #timer?: NodeJS.Timeout;
  #running?: Promise<TickResult>;

  constructor(o: { name: string; everyMs: number; run: () => Promise<TickResult>; log: Logger }) {
    this.#name = o.name;
    this.#everyMs = o.everyMs;
    this.#run = o.run;
    this.#log = o.log;
  }

  start(): void {
    this.#timer = setInterval(
      () =>
        void this.tick().catch((err) => this.#log.error({ err, process: this.#name }, 'periodic run failed')),
      this.#everyMs,
    );
    this.#timer.unref();
  }

  tick(): Promise<TickResult> {
    this.#running ??= this.#run().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running?.catch(() => {});
  }
}

/**
 * Runs `act` on each item; one item's trouble is logged and skipped, never stopping the rest. Returns how many
 * succeeded and the newest position their events reached.
 */
export async function forEachItem<T extends { id: string }>(
  items: T[],
  act: (item: T) => Promise<{ position?: Position }>,
  onError: (err: unknown, item: T) => void,
): Promise<TickResult> {
  const result: TickResult = { count: 0 };
  for (const item of items) {
    try {
      const { position } = await act(item);
      result.count++;
      if (position && (!result.position || position > result.position)) result.position = position;
    } catch (err) {
      onError(err, item);
    }
  }
  return result;
}
