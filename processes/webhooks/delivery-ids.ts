import { hash } from 'node:crypto';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';
let lastMs = Number.NaN;
let lastTime = '';

/** The first 10 characters of a ULID body: the time in milliseconds (events of one batch often share it). */
function encodeTime(at: Date): string {
  let ms = at.getTime();
  if (ms === lastMs) return lastTime;
  lastMs = ms;
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = CROCKFORD[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  lastTime = out;
  return out;
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
  `whl_${encodeTime(eventAt)}${hash('sha256', `${webhookId}\n${sourceKey}`, 'hex').slice(0, 16)}`;
