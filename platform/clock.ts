/** Time enters through this port so tests can jump hours and days without sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export class ManualClock implements Clock {
  #now: number;
  constructor(start: Date | string = '2026-01-01T00:00:00Z') {
    this.#now = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.#now);
  }
  advance(ms: number): void {
    this.#now += ms;
  }
  set(at: Date | string): void {
    this.#now = new Date(at).getTime();
  }
}
