import type { Claimed } from './dispatcher.process.ts';

/** What this process holds of one endpoint's deliveries. */
interface Lane {
  webhookId: string;
  /** Waiting for a request slot from `head` on. */
  rows: Claimed[];
  head: number;
  inFlight: number;
  /** Promised to the fan-out, whose transaction has not ended yet. */
  reserved: number;
}

/**
 * Claimed deliveries waiting for a request slot, one lane per endpoint, served in turn: an endpoint at its cap of
 * requests in flight (a slow one) is skipped without looking at its rows, so it never stands in the others' way.
 */
export class DispatchQueue {
  readonly #perEndpoint: number;
  readonly #lanes = new Map<string, Lane>();
  /** Lanes with rows waiting and a free slot, in turn order. */
  readonly #ready = new Set<Lane>();
  waiting = 0;
  inFlight = 0;
  reserved = 0;

  constructor(perEndpoint: number) {
    this.#perEndpoint = perEndpoint;
  }

  /** Everything held: waiting, in flight and reserved. */
  get held(): number {
    return this.waiting + this.inFlight + this.reserved;
  }

  #lane(webhookId: string): Lane {
    let lane = this.#lanes.get(webhookId);
    if (!lane) {
      lane = { webhookId, rows: [], head: 0, inFlight: 0, reserved: 0 };
      this.#lanes.set(webhookId, lane);
    }
    return lane;
  }

  #update(lane: Lane): void {
    const waiting = lane.rows.length - lane.head;
    if (waiting > 0 && lane.inFlight < this.#perEndpoint) this.#ready.add(lane);
    else this.#ready.delete(lane);
    if (waiting === 0 && lane.inFlight === 0 && lane.reserved === 0) this.#lanes.delete(lane.webhookId);
  }

  push(rows: Claimed[]): void {
    for (const row of rows) {
      const lane = this.#lane(row.webhook_id);
      lane.rows.push(row);
      this.waiting++;
      this.#update(lane);
    }
  }

  /** The next delivery to send, now counted in flight until `done`; undefined when every lane waits. */
  take(): Claimed | undefined {
    const lane: Lane | undefined = this.#ready.values().next().value;
    if (!lane) return undefined;
    const row = lane.rows[lane.head++];
    if (lane.head === lane.rows.length) {
      lane.rows = [];
      lane.head = 0;
    } else if (lane.head >= 1024) {
      lane.rows = lane.rows.slice(lane.head);
      lane.head = 0;
    }
    this.waiting--;
    lane.inFlight++;
    this.inFlight++;
    this.#ready.delete(lane); // back at the end of the turn order, if it still has room
    this.#update(lane);
    return row;
  }

  done(webhookId: string): void {
    const lane = this.#lane(webhookId);
    lane.inFlight--;
    this.inFlight--;
    this.#update(lane);
  }

  /** Room for one more delivery of the endpoint, held until `unreserve`, unless it holds `max` already. */
  reserve(webhookId: string, max: number): boolean {
    const lane = this.#lane(webhookId);
    if (lane.rows.length - lane.head + lane.inFlight + lane.reserved >= max) {
      this.#update(lane);
      return false;
    }
    lane.reserved++;
    this.reserved++;
    return true;
  }

  unreserve(webhookId: string): void {
    const lane = this.#lane(webhookId);
    lane.reserved--;
    this.reserved--;
    this.#update(lane);
  }

  /** Endpoints and how many deliveries of each this process holds (a claim takes fewer of those). */
  holdings(): { webhookIds: string[]; counts: number[] } {
    const webhookIds: string[] = [];
    const counts: number[] = [];
    for (const lane of this.#lanes.values()) {
      webhookIds.push(lane.webhookId);
      counts.push(lane.rows.length - lane.head + lane.inFlight + lane.reserved);
    }
    return { webhookIds, counts };
  }

  /** Removes and returns every waiting delivery. */
  drain(): Claimed[] {
    const out: Claimed[] = [];
    for (const lane of [...this.#lanes.values()]) {
      out.push(...lane.rows.slice(lane.head));
      lane.rows = [];
      lane.head = 0;
      this.#update(lane);
    }
    this.waiting = 0;
    return out;
  }
}
