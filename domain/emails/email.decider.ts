import { AppError, notFound } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import { type EmailContent, type EmailEvent, recipientsOf } from './email.events.ts';
import { type EmailStatus, isFinal, type Lifecycle, type RecipientStatus, rollUp } from './status.ts';

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
}

type Caller = { emailId: string; orgId: string; mode: Mode; at: string };

export type EmailCommand =
  | { type: 'QueueEmail'; content: EmailContent; sendAt?: string }
  | ({ type: 'RescheduleEmail'; sendAt: string } & Caller)
  | ({ type: 'CancelEmail' } & Caller)
  | { type: 'ReleaseEmail'; emailId: string; at: string }
  | { type: 'StartSending'; emailId: string; at: string }
  /** The MTA is about to send to `recipients` (those of them it may: `attemptable`); the attempt ends by `endsBy`. */
  | { type: 'StartDeliveryAttempt'; emailId: string; recipients: string[]; endsBy: string; at: string }
  | {
      type: 'RecordDeliveryOutcomes';
      emailId: string;
      messageId: string;
      at: string;
      outcomes: DeliveryOutcome[];
    }
  | { type: 'RecordComplaint'; emailId: string; recipient: string; at: string }
  /** A bounce report (DSN) that came back after the receiving server had accepted the message. */
  | {
      type: 'RecordBounceReport';
      emailId: string;
      recipient: string;
      bounceType: 'hard' | 'soft';
      smtpCode: number | null;
      smtpResponse: string;
      at: string;
    }
  /** A delay report (DSN, transient status) that came back after the receiving server had accepted the message. */
  | {
      type: 'RecordDelayReport';
      emailId: string;
      recipient: string;
      smtpCode: number | null;
      smtpResponse: string;
      at: string;
    }
  /** `client`: the opener's sealed client details, only when the organization records them. */
  | { type: 'RecordOpen'; emailId: string; client?: string; at: string }
  | { type: 'RecordClick'; emailId: string; link: string; client?: string; at: string };

export interface RecipientState {
  status: RecipientStatus;
  /** Last attempt recorded for this recipient (0 before the first). */
  attempts: number;
  /** While delayed: when the next attempt is due. */
  nextAttemptAt?: string;
  /** An attempt started on this recipient and no outcome recorded since (EmailDeliveryAttemptStarted). */
  inFlight?: { startedAt: string; endsBy: string };
}

export type EmailState =
  | { exists: false }
  | {
      exists: true;
      orgId: string;
      mode: Mode;
      lifecycle: Lifecycle;
      sendAt: string | null;
      recipients: Record<string, RecipientState>;
    };

export function statusOf(state: EmailState): EmailStatus | null {
  if (!state.exists) return null;
  return rollUp(
    state.lifecycle,
    Object.values(state.recipients).map((r) => r.status),
  );
}

function evolve(state: EmailState, event: EmailEvent): EmailState {
  if (event.type === 'EmailQueued' || event.type === 'EmailScheduled') {
    const d = event.data;
    const recipients = Object.fromEntries(
      recipientsOf(d).map((r) => [r, { status: 'pending' as const, attempts: 0 }]),
    );
    return {
      exists: true,
      orgId: d.orgId,
      mode: d.mode,
      lifecycle: event.type === 'EmailQueued' ? 'queued' : 'scheduled',
      sendAt: event.type === 'EmailScheduled' ? event.data.sendAt : null,
      recipients,
    };
  }
  if (!state.exists) return state;
  // An outcome ends the attempt in flight, if any.
  const setRecipient = (r: string, patch: Partial<RecipientState>) => {
    const { inFlight: _, ...current } = state.recipients[r] ?? { status: 'pending', attempts: 0 };
    return { ...state, recipients: { ...state.recipients, [r]: { ...current, ...patch } } };
  };
  switch (event.type) {
    case 'EmailRescheduled':
      return { ...state, sendAt: event.data.sendAt };
    case 'EmailCanceled':
      return { ...state, lifecycle: 'canceled' };
    case 'EmailReleased':
      return { ...state, lifecycle: 'queued' };
    case 'EmailSendingStarted':
      return { ...state, lifecycle: 'sending' };
    case 'EmailDeliveryAttemptStarted': {
      const { startedAt, endsBy } = event.data;
      const recipients = { ...state.recipients };
      for (const r of event.data.recipients)
        if (recipients[r]) recipients[r] = { ...recipients[r], inFlight: { startedAt, endsBy } };
      return { ...state, recipients };
    }
    case 'EmailSent':
      return { ...state, lifecycle: 'sent' };
    case 'EmailDelivered':
      return setRecipient(event.data.recipient, { status: 'delivered' });
    case 'EmailDeliveryDelayed':
      return setRecipient(event.data.recipient, {
        status: 'delayed',
        attempts: event.data.attempt,
        nextAttemptAt: event.data.nextAttemptAt,
      });
    case 'EmailBounced':
      return setRecipient(event.data.recipient, { status: 'bounced' });
    case 'EmailComplained':
      return setRecipient(event.data.recipient, { status: 'complained' });
    default:
      return state;
  }
}

/** Another organization's email, or the other mode's, does not exist for the caller. */
function ownedBy(state: EmailState, c: Caller): Extract<EmailState, { exists: true }> {
  if (!state.exists || state.orgId !== c.orgId || state.mode !== c.mode) throw notFound('Email', c.emailId);
  return state;
}

function mustBeScheduled(state: Extract<EmailState, { exists: true }>, emailId: string, action: string) {
  const status = statusOf(state);
  if (status !== 'scheduled') {
    throw new AppError(
      'email_not_scheduled',
      `Email ${emailId} is ${status}; only a scheduled email can be ${action}.`,
    );
  }
}

function outcomeEvents(
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
      if (o.attempt <= r.attempts) continue;
      events.push({
        type: 'EmailDeliveryDelayed',
        data: {
          emailId,
          recipient: o.recipient,
          attempt: o.attempt,
          nextAttemptAt: o.nextAttemptAt ?? at,
          smtpResponse: o.smtpResponse,
          ...(o.smtpCode !== undefined && { smtpCode: o.smtpCode }),
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
 * still be sending to them). `outcomeUnknown`: those of them whose last attempt ended without an outcome.
 */
export function attemptable(
  state: EmailState,
  at: string,
  among?: string[],
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
      (r.status === 'delayed' && (!r.nextAttemptAt || Date.parse(r.nextAttemptAt) <= now));
    if (!due) continue;
    if (r.inFlight) {
      if (now < Date.parse(r.inFlight.endsBy)) continue;
      outcomeUnknown.push(address);
    }
    recipients.push(address);
  }
  return { recipients, outcomeUnknown };
}

const wentOut = (l: Lifecycle) => l === 'sent';

/**
 * The recipient (lower-cased) while a remote report on it is news: the email went out and the recipient has not
 * bounced or complained. Accepted first, bounced later is how most remote bounces arrive: delivered may still
 * become bounced, and a delay matters only while the recipient may still be reached.
 */
function reportable(state: EmailState, recipient: string): string | null {
  const address = recipient.toLowerCase();
  const r = state.exists && wentOut(state.lifecycle) ? state.recipients[address] : undefined;
  return r && r.status !== 'bounced' && r.status !== 'complained' ? address : null;
}

export const emailDecider: Decider<EmailCommand, EmailEvent, EmailState> = {
  initialState: { exists: false },
  evolve,
  decide(command, state) {
    switch (command.type) {
      case 'QueueEmail': {
        if (state.exists) throw new AppError('conflict', `Email ${command.content.emailId} already exists`);
        if (recipientsOf(command.content).length === 0) {
          throw new AppError(
            'all_recipients_suppressed',
            'Every recipient of this email is on the suppression list.',
          );
        }
        return command.sendAt
          ? [{ type: 'EmailScheduled', data: { ...command.content, sendAt: command.sendAt } }]
          : [{ type: 'EmailQueued', data: command.content }];
      }
      case 'RescheduleEmail': {
        const s = ownedBy(state, command);
        mustBeScheduled(s, command.emailId, 'rescheduled');
        return [{ type: 'EmailRescheduled', data: { emailId: command.emailId, sendAt: command.sendAt } }];
      }
      case 'CancelEmail': {
        const s = ownedBy(state, command);
        mustBeScheduled(s, command.emailId, 'canceled');
        return [{ type: 'EmailCanceled', data: { emailId: command.emailId, canceledAt: command.at } }];
      }
      case 'ReleaseEmail': {
        // The scheduler may be late, early (rescheduled meanwhile) or second (another process, a cancel): only a
        // scheduled email that is due moves on; anything else is nothing to do.
        if (!state.exists || state.lifecycle !== 'scheduled' || !state.sendAt || state.sendAt > command.at)
          return [];
        return [{ type: 'EmailReleased', data: { emailId: command.emailId, releasedAt: command.at } }];
      }
      case 'StartSending': {
        if (!state.exists || state.lifecycle !== 'queued') return [];
        return [{ type: 'EmailSendingStarted', data: { emailId: command.emailId, startedAt: command.at } }];
      }
      case 'StartDeliveryAttempt': {
        if (!state.exists) return [];
        // Decided on the stream as it stands: of two processes about to send, the second sees the first's attempt.
        const { recipients, outcomeUnknown } = attemptable(state, command.at, command.recipients);
        if (recipients.length === 0) return [];
        const { emailId, at, endsBy } = command;
        const events: EmailEvent[] = [];
        if (state.lifecycle === 'queued')
          events.push({ type: 'EmailSendingStarted', data: { emailId, startedAt: at } });
        events.push({
          type: 'EmailDeliveryAttemptStarted',
          data: {
            emailId,
            recipients,
            startedAt: at,
            endsBy,
            ...(outcomeUnknown.length > 0 && { outcomeUnknown }),
          },
        });
        return events;
      }
      case 'RecordDeliveryOutcomes': {
        if (
          !state.exists ||
          state.lifecycle === 'canceled' ||
          state.lifecycle === 'scheduled' ||
          state.lifecycle === 'queued'
        ) {
          return [];
        }
        const events = outcomeEvents(state, command.emailId, command.at, command.outcomes);
        if (state.lifecycle === 'sending') {
          events.unshift({
            type: 'EmailSent',
            data: { emailId: command.emailId, messageId: command.messageId, sentAt: command.at },
          });
        }
        return events;
      }
      case 'RecordComplaint': {
        if (!state.exists || !wentOut(state.lifecycle)) return [];
        const r = state.recipients[command.recipient.toLowerCase()];
        if (!r || r.status === 'complained') return [];
        return [
          {
            type: 'EmailComplained',
            data: {
              emailId: command.emailId,
              recipient: command.recipient.toLowerCase(),
              complainedAt: command.at,
            },
          },
        ];
      }
      case 'RecordBounceReport': {
        const recipient = reportable(state, command.recipient);
        if (!recipient) return [];
        const { type: _, at, ...data } = command;
        return [{ type: 'EmailBounced', data: { ...data, recipient, bouncedAt: at } }];
      }
      case 'RecordDelayReport': {
        const recipient = reportable(state, command.recipient);
        if (!recipient) return [];
        const { type: _, at, ...data } = command;
        return [{ type: 'EmailDelayReported', data: { ...data, recipient, reportedAt: at } }];
      }
      case 'RecordOpen': {
        if (!state.exists || !wentOut(state.lifecycle)) return [];
        const { type: _, at, ...data } = command;
        return [{ type: 'EmailOpened', data: { ...data, openedAt: at } }];
      }
      case 'RecordClick': {
        if (!state.exists || !wentOut(state.lifecycle)) return [];
        const { type: _, at, ...data } = command;
        return [{ type: 'EmailClicked', data: { ...data, clickedAt: at } }];
      }
    }
  },
};
