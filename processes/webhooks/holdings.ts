/**
 * How many deliveries of each endpoint the dispatcher of this process holds (claimed, waiting for the sender
 * thread or in it): claims take fewer of an endpoint that holds many.
 */
export class Holdings {
  readonly byEndpoint = new Map<string, number>();
  total = 0;

  add(webhookId: string): void {
    this.byEndpoint.set(webhookId, (this.byEndpoint.get(webhookId) ?? 0) + 1);
    this.total++;
  }

  remove(webhookId: string): void {
    const n = (this.byEndpoint.get(webhookId) ?? 0) - 1;
    if (n > 0) this.byEndpoint.set(webhookId, n);
    else this.byEndpoint.delete(webhookId);
    this.total--;
  }
}
