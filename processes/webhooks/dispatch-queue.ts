/** One endpoint's deliveries. */
interface Lane<T> {
  key: string;
  /** Waiting for a request slot from `head` on. */
  items: T[];
  head: number;
  inFlight: number;
}

/**
 * Deliveries waiting, one lane per endpoint, served in turn: an endpoint at its cap of deliveries in flight (a slow
 * one) is skipped without looking at its deliveries, so it never stands in the others' way. The dispatcher keeps
 * its claimed deliveries waiting for a request slot here.
 */
export class DispatchQueue<T> {
  readonly #perEndpoint: number;
  readonly #laneOf: (item: T) => string;
  readonly #lanes = new Map<string, Lane<T>>();
  /** Lanes with deliveries waiting and a free slot, in turn order. */
  readonly #ready = new Set<Lane<T>>();
  waiting = 0;
  inFlight = 0;

  constructor(perEndpoint: number, laneOf: (item: T) => string) {
    this.#perEndpoint = perEndpoint;
    this.#laneOf = laneOf;
  }

  #lane(key: string): Lane<T> {
    let lane = this.#lanes.get(key);
    if (!lane) {
      lane = { key, items: [], head: 0, inFlight: 0 };
      this.#lanes.set(key, lane);
    }
    return lane;
  }

  #update(lane: Lane<T>): void {
    const waiting = lane.items.length - lane.head;
    if (waiting > 0 && lane.inFlight < this.#perEndpoint) this.#ready.add(lane);
    else this.#ready.delete(lane);
    if (waiting === 0 && lane.inFlight === 0) this.#lanes.delete(lane.key);
  }

  push(item: T): void {
    const lane = this.#lane(this.#laneOf(item));
    lane.items.push(item);
    this.waiting++;
    this.#update(lane);
  }

  /** The next delivery to send, now counted in flight until `done`; undefined when every lane waits. */
  take(): T | undefined {
    const lane: Lane<T> | undefined = this.#ready.values().next().value;
    if (!lane) return undefined;
    const item = lane.items[lane.head++];
    if (lane.head === lane.items.length) {
      lane.items = [];
      lane.head = 0;
    } else if (lane.head >= 1024) {
      lane.items = lane.items.slice(lane.head);
      lane.head = 0;
    }
    this.waiting--;
    lane.inFlight++;
    this.inFlight++;
    this.#ready.delete(lane); // back at the end of the turn order, if it still has room
    this.#update(lane);
    return item;
  }

  /** A delivery of the lane `key` taken earlier is finished: its slot is free. */
  done(key: string): void {
    const lane = this.#lane(key);
    lane.inFlight--;
    this.inFlight--;
    this.#update(lane);
  }

  /** The lanes with deliveries waiting. */
  keys(): string[] {
    const keys: string[] = [];
    for (const lane of this.#lanes.values()) if (lane.items.length > lane.head) keys.push(lane.key);
    return keys;
  }

  /** Removes and returns the waiting deliveries of the lane `key` (those in flight stay counted until `done`). */
  remove(key: string): T[] {
    const lane = this.#lanes.get(key);
    if (!lane) return [];
    const out = lane.items.slice(lane.head);
    lane.items = [];
    lane.head = 0;
    this.waiting -= out.length;
    this.#update(lane);
    return out;
  }

  /** Removes and returns every waiting delivery. */
  drain(): T[] {
    return this.keys().flatMap((key) => this.remove(key));
  }
}
