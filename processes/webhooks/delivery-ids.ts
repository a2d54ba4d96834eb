import { hash } from 'node:crypto';
import { encodeTime } from '../../platform/ids.ts';

let lastMs = Number.NaN;
let lastTime = '';

/** The time part of an id, kept for the next call: events of one batch often share their millisecond. */
function timeOf(at: Date): string {
  const ms = at.getTime();
  if (ms !== lastMs) {
    lastMs = ms;
    lastTime = encodeTime(ms);
  }
  return lastTime;
}

/**
 * A delivery's id, derived from its webhook and source event rather than drawn at random: fanning the same event
 * out again, or replaying it, finds the same row through the primary key (webhook_id, id), so no unique index on
 * the source is needed, and every send of it carries the same `webhook-id` for receivers to de-duplicate on. The
 * shape is that of other ids (26 characters, 10 of time), the time being the source event's, so the delivery log
 * sorts by event time; the rest is 64 bits of SHA-256 in hex (a one-shot hex digest is the cheapest form here),
 * which only need to tell apart one endpoint's deliveries of events of the same millisecond.
 */
export const deliveryId = (webhookId: string, sourceKey: string, eventAt: Date): string =>
  `whl_${timeOf(eventAt)}${hash('sha256', `${webhookId}\n${sourceKey}`, 'hex').slice(0, 16)}`;
