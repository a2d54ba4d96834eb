import type { Services } from '../../platform/services.ts';
import type { Claimed } from './dispatcher.process.ts';

/**
 * The fan-out's new deliveries go straight to a dispatcher running in the same process: they are inserted
 * already claimed for it (the token and lease a claim would set), which spares the claim's UPDATE and reading
 * every body back from the database. Rows it has no room for are inserted unclaimed, for any dispatcher.
 */
export interface HandOver {
  token: string;
  leasedUntil: Date;
  /** Room for one more delivery to the endpoint, or false (then insert it unclaimed). */
  reserve(webhookId: string): boolean;
  /** The fan-out's transaction ended: `committed` (null if it failed) are sent; other reservations are freed. */
  settle(committed: Claimed[] | null): void;
}

export interface DeliveryTaker {
  handOver(now: Date): HandOver;
}

/** By Services: one set per process (tests run several in one). */
const takers = new WeakMap<Services, DeliveryTaker>();

export const takerFor = (services: Services): DeliveryTaker | undefined => takers.get(services);

export function offerTaker(services: Services, taker: DeliveryTaker): void {
  if (!takers.has(services)) takers.set(services, taker);
}

export function withdrawTaker(services: Services, taker: DeliveryTaker): void {
  if (takers.get(services) === taker) takers.delete(services);
}
