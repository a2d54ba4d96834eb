import type { Services } from '../../platform/services.ts';
import type { Claimed } from './dispatcher.process.ts';

/**
 * The fan-out's new deliveries go straight to a dispatcher running in the same process, unwritten: no row is
 * inserted before the attempt, and its outcome is the first write (a success row, or a row for the next attempt).
 * The fan-out's checkpoint waits for those outcomes (fan-out-checkpoint.ts). Rows it has no room for are inserted
 * for any dispatcher to claim.
 */
export interface HandOver {
  /** Room for one more delivery to the endpoint, or false (then it is written for any dispatcher). */
  reserve(webhookId: string): boolean;
  /** The fan-out's batch is committed: `handedOver` (null if it failed) are sent; other reservations are freed. */
  settle(handedOver: Claimed[] | null): void;
}

export interface DeliveryTaker {
  handOver(): HandOver;
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
