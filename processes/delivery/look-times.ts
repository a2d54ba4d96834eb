import { destinationOf } from '../../domain/emails/addresses.ts';
import { attemptable } from '../../domain/emails/delivery-attempts.ts';
import type { EmailState } from '../../domain/emails/email.state.ts';
import { isFinal } from '../../domain/emails/status.ts';
import type { UnknownOutcomes } from './attempts.ts';

type Known = Extract<EmailState, { exists: true }>;
type Recipient = Known['recipients'][string];

/** The email's recipients at one destination (their domain), with their state. */
export function recipientsAt(state: Known, destination: string): [string, Recipient][] {
  return Object.entries(state.recipients).filter(([address]) => destinationOf(address) === destination);
}

/** The destinations of a list of recipients, each once. */
export const destinationsOf = (recipients: string[]): string[] => [...new Set(recipients.map(destinationOf))];

/**
 * The destination's recipients without an outcome yet, and delayed ones whose retry time has come (`early`: every
 * delayed one), none whose attempt is in flight (`attemptable`). One whose last attempt ended without an outcome
 * also waits until UNKNOWN_GRACE_MS after this process first saw that attempt (`waitUntil`: when the first of
 * them may go).
 */
export function dueRecipients(
  email: { id: string; state: Known; destination: string },
  o: { now: Date; unknown: UnknownOutcomes; early: boolean },
): { due: string[]; waitUntil?: number } {
  const here = recipientsAt(email.state, email.destination);
  const retryAt = new Map<string, number>();
  for (const [address, r] of here)
    if (r.inFlight && !isFinal(r.status))
      retryAt.set(address, o.unknown.retryAt(email.id, r.inFlight.startedAt));
  const among = here.map(([address]) => address);
  const { recipients, outcomeUnknown } = attemptable(email.state, o.now.toISOString(), among, o.early);
  let waitUntil: number | undefined;
  const due = recipients.filter((address) => {
    if (!outcomeUnknown.includes(address)) return true;
    const at = retryAt.get(address)!;
    if (at <= o.now.getTime()) return true;
    waitUntil = Math.min(waitUntil ?? at, at);
    return false;
  });
  return { due, waitUntil };
}

/**
 * When to look again at the destination's recipients: the earliest of a delayed recipient's retry, the end of an
 * attempt in flight, and `waitUntil` (an attempt whose outcome is unknown); null when none of them waits for
 * anything (the job is done).
 */
export function nextLook(
  email: { state: Known; destination: string },
  now: number,
  waitUntil?: number,
): string | null {
  const times = waitUntil === undefined ? [] : [waitUntil];
  for (const [, r] of recipientsAt(email.state, email.destination)) {
    if (isFinal(r.status)) continue;
    // An attempt past its end without an outcome waits for `waitUntil`.
    if (r.inFlight) times.push(Math.max(Date.parse(r.inFlight.endsBy), waitUntil ?? now));
    else if (r.status === 'delayed' && r.nextAttemptAt) times.push(Date.parse(r.nextAttemptAt));
    else times.push(now);
  }
  return times.length === 0 ? null : new Date(Math.min(...times)).toISOString();
}
