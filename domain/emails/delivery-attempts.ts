import type { BounceClass } from './bounce-classes.ts';
import type { EmailEvent } from './email.events.ts';
import type { EmailState } from './email.state.ts';
import { isFinal, type Lifecycle } from './status.ts';

/** One recipient's result of one delivery attempt (from the MTA or the simulator). */
export interface DeliveryOutcome {
  recipient: string;
  result: 'delivered' | 'delayed' | 'bounced';
  /** 1-based attempt this outcome belongs to. */
  attempt: number;
  smtpCode?: number;
  smtpResponse: string;
  mx?: string;
  tls?: boolean;
  /** For `delayed`: when the next attempt is due. */
  nextAttemptAt?: string;
  /** For `bounced`: hard (5xx) or soft (retries exhausted). */
  bounceType?: 'hard' | 'soft';
  /** For `bounced`: why the server refused; for `delayed`: why it deferred (domain/emails/bounce-classes.ts). */
  classification?: BounceClass;
  /**
   * For `delayed`: false when no server was asked (no connection to the destination came free in time). `attempt`
   * is then the last one's, unchanged: a wait for a connection never uses up the retry schedule.
   */
  attempted?: false;
  /**
   * false: Postline decided it without sending anything (the sending domain is gone, the operator gave the
   * destination up). No `EmailSent` follows from it, and a recipient whose attempt is in flight is left to that
   * attempt (another process may be sending to it).
   */
  sent?: false;
}

/** Whether an attempt on the recipient is in flight at `at`: started, no outcome, its `endsBy` not reached. */
export const inFlightAt = (
  state: Extract<EmailState, { exists: true }>,
  recipient: string,
  at: string,
): boolean => {
  const flight = state.recipients[recipient]?.inFlight;
  return !!flight && Date.parse(at) < Date.parse(flight.endsBy);
};

/** When the attempt in flight at `at` on any of the email's recipients ends (the latest `endsBy`); null: none is. */
export function attemptEndsAfter(state: EmailState, at: number): Date | null {
  if (!state.exists) return null;
  const ends = Object.values(state.recipients)
    .map((r) => (r.inFlight ? Date.parse(r.inFlight.endsBy) : 0))
    .filter((t) => t > at);
  return ends.length > 0 ? new Date(Math.max(...ends)) : null;
}

/**
 * Whether a stopped broadcast withdraws the email at `at`: not started yet, or started but received by nobody and
 * sent to by nobody now (every recipient waiting for its first attempt or for a retry). One with an attempt in
 * flight goes on, and so does one a recipient's server has taken.
 */
export function withdrawable(state: EmailState, at: string): boolean {
  if (!state.exists || state.lifecycle === 'canceled') return false;
  if (state.lifecycle === 'queued' || state.lifecycle === 'scheduled') return true;
  return Object.entries(state.recipients).every(
    ([address, r]) => (r.status === 'pending' || r.status === 'delayed') && !inFlightAt(state, address, at),
  );
}

/** The events of a delivery attempt's outcomes: one per recipient still waiting for this attempt's. */
export function outcomeEvents(
  state: Extract<EmailState, { exists: true }>,
  emailId: string,
  at: string,
  outcomes: DeliveryOutcome[],
) {
  const events: EmailEvent[] = [];
  for (const o of outcomes) {
    const r = state.recipients[o.recipient];
    // Unknown recipients, final ones and replays of an attempt already recorded change nothing (at-least-once).
    if (!r || isFinal(r.status)) continue;
    if (o.result === 'delayed') {
      // An attempt's outcome is recorded once: a counted one by its number, one not counted ends the attempt in
      // flight (so a replay of it finds none).
      if (o.attempted === false ? !r.inFlight : o.attempt <= r.attempts) continue;
      events.push({
        type: 'EmailDeliveryDelayed',
        data: {
          emailId,
          recipient: o.recipient,
          attempt: o.attempt,
          nextAttemptAt: o.nextAttemptAt ?? at,
          smtpResponse: o.smtpResponse,
          ...(o.smtpCode !== undefined && { smtpCode: o.smtpCode }),
          ...(o.attempted === false && { attempted: false as const }),
          ...(o.classification && { classification: o.classification }),
          delayedAt: at,
        },
      });
    } else if (o.result === 'delivered') {
      events.push({
        type: 'EmailDelivered',
        data: {
          emailId,
          recipient: o.recipient,
          smtpResponse: o.smtpResponse,
          deliveredAt: at,
          ...(o.mx !== undefined && { mx: o.mx }),
          ...(o.tls !== undefined && { tls: o.tls }),
        },
      });
    } else {
      events.push({
        type: 'EmailBounced',
        data: {
          emailId,
          recipient: o.recipient,
          bounceType: o.bounceType ?? 'hard',
          smtpCode: o.smtpCode ?? null,
          smtpResponse: o.smtpResponse,
          ...(o.classification && { classification: o.classification }),
          bouncedAt: at,
        },
      });
    }
  }
  return events;
}

/**
 * Who a delivery attempt at `at` may go to: recipients without an outcome and delayed ones whose retry time has
 * come, except those with an attempt in flight (started, no outcome, `endsBy` not reached: another process may
 * still be sending to them). `outcomeUnknown`: those of them whose last attempt ended without an outcome. `early`:
 * delayed recipients are due whatever their retry time (the operator asked for a retry now).
 */
export function attemptable(
  state: EmailState,
  at: string,
  among?: string[],
  early = false,
): { recipients: string[]; outcomeUnknown: string[] } {
  const recipients: string[] = [];
  const outcomeUnknown: string[] = [];
  if (!state.exists || state.lifecycle === 'canceled' || state.lifecycle === 'scheduled')
    return { recipients, outcomeUnknown };
  const now = Date.parse(at);
  const wanted = among && new Set(among.map((r) => r.toLowerCase()));
  for (const [address, r] of Object.entries(state.recipients)) {
    if (wanted && !wanted.has(address)) continue;
    const due =
      r.status === 'pending' ||
      (r.status === 'delayed' && (early || !r.nextAttemptAt || Date.parse(r.nextAttemptAt) <= now));
    if (!due) continue;
    if (r.inFlight) {
      if (now < Date.parse(r.inFlight.endsBy)) continue;
      outcomeUnknown.push(address);
    }
    recipients.push(address);
  }
  return { recipients, outcomeUnknown };
}

export const wentOut = (l: Lifecycle) => l === 'sent';

/**
 * The recipient (lower-cased) while a remote report on it is news: the email went out and the recipient has not
 * bounced or complained. Accepted first, bounced later is how most remote bounces arrive: delivered may still
 * become bounced, and a delay matters only while the recipient may still be reached.
 */
export function reportable(state: EmailState, recipient: string): string | null {
  const address = recipient.toLowerCase();
  const r = state.exists && wentOut(state.lifecycle) ? state.recipients[address] : undefined;
  return r && r.status !== 'bounced' && r.status !== 'complained' ? address : null;
}
