import { type Position, START, type StoredEvent, type SubscribeOptions, type Subscription } from './types.ts';

/** Thrown by a follower to follow again at once from the consumer's checkpoint (it moved: a rebuild). */
export class Restart extends Error {}

/**
 * What an adapter brings to the one subscription loop: how to follow its log. Made for one subscription, so it
 * may keep state between calls.
 */
export interface LogFollower {
  /**
   * Hands the log's events after `from` to `deliver`, batch by batch, until `stopped()` says so or it has waited
   * once for more (then it returns and is called again, from the consumer's checkpoint if it keeps one). A failure
   * is thrown: the loop backs off and follows again from the last position delivered.
   */
  follow(
    from: Position,
    deliver: (events: StoredEvent[]) => Promise<void>,
    stopped: () => boolean,
  ): Promise<void>;
  /** Ends the follower's wait at once (the subscription stops). */
  interrupt(): void;
  /** The back-off after a failure: `ms`, or less if the follower learns that trying again is worth it. */
  sleep(ms: number): Promise<void>;
  /** The position `caughtUp()` waits for: everything committed now. */
  head(): Promise<Position>;
  /** Someone waits for `target`: a follower that could be asleep past it wakes. */
  wanted?(target: Position): void;
}

/**
 * The subscription loop of every adapter: follows the log from `options.from` (or the consumer's checkpoint, read
 * before each follow), hands batches to `handle` and moves on only after it succeeded, backs off on failures
 * (50 ms doubling to 5 s) without skipping anything, and answers `caughtUp()`.
 */
export function runSubscription(
  options: SubscribeOptions,
  handle: (events: StoredEvent[]) => Promise<void>,
  follower: LogFollower,
  onStop: () => void,
): Subscription {
  let position: Position = typeof options.from === 'function' ? START : (options.from ?? START);
  let stopped = false;
  let failures = 0;
  const waiters: { target: Position; resolve: () => void }[] = [];
  const settle = () => {
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (waiters[i].target <= position) waiters.splice(i, 1)[0].resolve();
    }
  };
  const deliver = async (events: StoredEvent[]) => {
    await handle(events);
    position = events[events.length - 1].position;
    failures = 0;
    settle();
  };
  const loop = (async () => {
    while (!stopped) {
      try {
        if (typeof options.from === 'function') position = await options.from();
        settle();
        await follower.follow(position, deliver, () => stopped);
      } catch (error) {
        if (stopped) break;
        if (error instanceof Restart) continue;
        // A failed read or batch (the database away, a lock held elsewhere, a dropped connection): followed again
        // from the last position handled (or the consumer's checkpoint), so nothing is skipped.
        failures++;
        await follower.sleep(Math.min(5000, 50 * 2 ** failures));
      }
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      follower.interrupt();
      await loop;
      onStop();
      for (const w of waiters.splice(0)) w.resolve();
    },
    caughtUp: async () => {
      const target = await follower.head();
      if (target <= position || stopped) return;
      await new Promise<void>((resolve) => {
        waiters.push({ target, resolve });
        follower.wanted?.(target);
      });
    },
  };
}

/** The subscriptions of one store, each run by the loop above; closing the store stops them all. */
export class Subscriptions {
  readonly #running = new Set<Subscription>();

  start(
    options: SubscribeOptions,
    handle: (events: StoredEvent[]) => Promise<void>,
    follower: LogFollower,
  ): Subscription {
    const subscription = runSubscription(options, handle, follower, () => this.#running.delete(subscription));
    this.#running.add(subscription);
    return subscription;
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.#running].map((s) => s.stop()));
  }
}
