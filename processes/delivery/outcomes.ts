import { type BounceRule, classifyBounce, refusalOf } from '../../domain/emails/bounce-classes.ts';
import type { DeliveryOutcome, EmailState } from '../../write-side/emails/email.commands.ts';
import { EMAIL_RETRIES, nextAttemptAt } from '../retry-schedule.ts';
import type { RecipientOutcome } from './mta/message.ts';

type Known = Extract<EmailState, { exists: true }>;

/**
 * What a server's answer to a recipient becomes, as the attempt after the last one recorded for it: delivered;
 * a 5xx bounces, hard or soft by its class (refusalOf); anything temporary is delayed until its retry time, with
 * the class of its answer (the bounce classes: `rate_limited`, `mailbox_full`, `transient`, …), or bounces (soft,
 * with the class of its last answer) after the last. A deferral without a server's answer (`attempted: false`)
 * is not an attempt: delayed by the schedule's first step, its count unchanged.
 */
export function outcomeOf(
  state: Known,
  o: RecipientOutcome,
  now: Date,
  rules: readonly BounceRule[] = [],
): DeliveryOutcome {
  const recipient = o.recipient.toLowerCase();
  const attempt = (state.recipients[recipient]?.attempts ?? 0) + 1;
  const base = {
    recipient,
    attempt,
    smtpResponse: o.smtpResponse,
    ...(o.smtpCode !== undefined && { smtpCode: o.smtpCode }),
  };
  if (o.result === 'delivered')
    return {
      ...base,
      result: 'delivered',
      ...(o.mx && { mx: o.mx }),
      ...(o.tls !== undefined && { tls: o.tls }),
    };
  if (o.result === 'bounced') return { ...base, result: 'bounced', ...refusalOf(o.smtpResponse, rules) };
  const classification = classifyBounce(o.smtpResponse, rules);
  // No server was asked: due again as after a first failure, the schedule where it was.
  if (o.attempted === false)
    return {
      ...base,
      attempt: attempt - 1,
      result: 'delayed',
      nextAttemptAt: nextAttemptAt(EMAIL_RETRIES, 1, now)!.toISOString(),
      attempted: false,
      classification,
    };
  const next = nextAttemptAt(EMAIL_RETRIES, attempt, now);
  return next
    ? { ...base, result: 'delayed', nextAttemptAt: next.toISOString(), classification }
    : {
        ...base,
        result: 'bounced',
        bounceType: 'soft',
        classification,
        smtpResponse: `gave up after ${attempt} attempts: ${o.smtpResponse}`,
      };
}

/**
 * An outcome Postline decided without sending anything (the sending domain gone): no EmailSent follows from it,
 * and a recipient whose attempt is in flight is left to that attempt (the decider's rule).
 */
export const unsent = (o: DeliveryOutcome): DeliveryOutcome => ({ ...o, sent: false });

/**
 * A recipient of mail the operator gave up for its destination (`postline queue bounce`): a soft bounce, nothing
 * sent.
 */
export function givenUp(recipient: string, attempts: number, destination: string): DeliveryOutcome {
  return {
    recipient,
    attempt: attempts + 1,
    result: 'bounced',
    bounceType: 'soft',
    classification: 'unknown',
    smtpResponse: `local: delivery to ${destination} was given up by the operator`,
    sent: false,
  };
}
