/**
 * How many deliveries of each endpoint the dispatcher of this process holds: handed to its sender thread (waiting
 * there or in flight), or promised to the fan-out, whose transaction has not ended yet. Claims take fewer of an
 * endpoint that holds many, and hand-overs stop at a cap per endpoint.
 */
export class Holdings {
  readonly #byEndpoint = new Map<string, number>();
  total = 0;

  add(webhookId: string): void {
    this.#byEndpoint.set(webhookId, (this.#byEndpoint.get(webhookId) ?? 0) + 1);
    this.total++;
  }

  /** Adds one unless the endpoint holds `max` already. */
  reserve(webhookId: string, max: number): boolean {
    if ((this.#byEndpoint.get(webhookId) ?? 0) >= max) return false;
    this.add(webhookId);
    return true;
  }

  remove(webhookId: string): void {
    const n = (this.#byEndpoint.get(webhookId) ?? 0) - 1;
    if (n > 0) this.#byEndpoint.set(webhookId, n);
    else this.#byEndpoint.delete(webhookId);
    this.total--;
  }

  /** Endpoints and how many deliveries of each are held, as the claim query takes them. */
  snapshot(): { webhookIds: string[]; counts: number[] } {
    return { webhookIds: [...this.#byEndpoint.keys()], counts: [...this.#byEndpoint.values()] };
  }
}
