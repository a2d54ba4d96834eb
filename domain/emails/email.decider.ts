import { AppError, notFound } from '../../platform/errors.ts';
import type { Decider } from '../../platform/eventstore/command.ts';
import type { Mode } from '../../platform/eventstore/types.ts';
import {
  attemptable,
  type DeliveryOutcome,
  inFlightAt,
  outcomeEvents,
  reportable,
  wentOut,
  withdrawable,
} from './delivery-attempts.ts';
import { type EmailBounced, type EmailContent, type EmailEvent, recipientsOf } from './email.events.ts';
import { type EmailState, evolveEmail, initialEmailState, statusOf } from './email.state.ts';

type Caller = { emailId: string; orgId: string; mode: Mode; at: string };

export type EmailCommand =
  | { type: 'QueueEmail'; content: EmailContent; sendAt?: string }
  | ({ type: 'RescheduleEmail'; sendAt: string } & Caller)
  | ({ type: 'CancelEmail' } & Caller)
  /**
   * Its broadcast was stopped: an email nobody received and nobody is sending to is canceled (`withdrawable`),
   * also one waiting for a retry; one with an attempt in flight goes on.
   */
  | { type: 'WithdrawEmail'; emailId: string; at: string }
  | { type: 'ReleaseEmail'; emailId: string; at: string }
  | { type: 'StartSending'; emailId: string; at: string }
  /**
   * The MTA is about to send to `recipients` (those of them it may: `attemptable`); the attempt ends by `endsBy`.
   * `early`: the operator asked for a retry now, so delayed recipients go before their retry time.
   */
  | {
      type: 'StartDeliveryAttempt';
      emailId: string;
      recipients: string[];
      endsBy: string;
      early?: boolean;
      /** The egress source it leaves from (SOURCES_FILE), recorded with the attempt. */
      source?: string;
      sourceAddress?: string;
      at: string;
    }
  | {
      type: 'RecordDeliveryOutcomes';
      emailId: string;
      messageId: string;
      at: string;
      outcomes: DeliveryOutcome[];
    }
  | { type: 'RecordComplaint'; emailId: string; recipient: string; at: string }
  /** A bounce report (DSN) that came back after the receiving server had accepted the message. */
  | ({ type: 'RecordBounceReport'; at: string } & Omit<EmailBounced['data'], 'bouncedAt'>)
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

type Known = Extract<EmailState, { exists: true }>;
type Command<T extends EmailCommand['type']> = Extract<EmailCommand, { type: T }>;

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

/** Accepting, rescheduling, canceling and releasing: the commands of an email before it goes out. */
function decideLifecycle(
  command: Command<
    'QueueEmail' | 'RescheduleEmail' | 'CancelEmail' | 'WithdrawEmail' | 'ReleaseEmail' | 'StartSending'
  >,
  state: EmailState,
): EmailEvent[] {
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
    case 'WithdrawEmail': {
      if (!withdrawable(state, command.at)) return [];
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
  }
}

/** The MTA is about to send: the attempt, for the recipients it may go to now (`attemptable`). */
function startAttempt(command: Command<'StartDeliveryAttempt'>, state: EmailState): EmailEvent[] {
  // A canceled email is never sent, whatever copy of its stream the MTA decided on.
  if (!state.exists || state.lifecycle === 'canceled') return [];
  // Decided on the stream as it stands: of two processes about to send, the second sees the first's attempt.
  const { recipients, outcomeUnknown } = attemptable(state, command.at, command.recipients, command.early);
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
      ...(command.source !== undefined && { source: command.source }),
      ...(command.sourceAddress !== undefined && { sourceAddress: command.sourceAddress }),
    },
  });
  return events;
}

/**
 * An attempt's outcomes, once the email is on its way: `EmailSent` with the first that sent something (none for
 * waits for a connection slot, nor for outcomes decided without a send, `sent: false`). An outcome decided without
 * a send leaves a recipient whose attempt is in flight to that attempt.
 */
function recordOutcomes(command: Command<'RecordDeliveryOutcomes'>, state: EmailState): EmailEvent[] {
  if (!state.exists || ['canceled', 'scheduled', 'queued'].includes(state.lifecycle)) return [];
  const known = state as Known;
  const outcomes = command.outcomes.filter(
    (o) => o.sent !== false || !inFlightAt(known, o.recipient, command.at),
  );
  if (outcomes.length === 0 && command.outcomes.length > 0) return [];
  const events = outcomeEvents(known, command.emailId, command.at, outcomes);
  const sends = outcomes.length === 0 || outcomes.some((o) => o.attempted !== false && o.sent !== false);
  if (state.lifecycle === 'sending' && sends) {
    events.unshift({
      type: 'EmailSent',
      data: { emailId: command.emailId, messageId: command.messageId, sentAt: command.at },
    });
  }
  return events;
}

/** What comes back once the email went out: complaints, remote reports, opens and clicks. */
function recordReport(
  command: Command<
    'RecordComplaint' | 'RecordBounceReport' | 'RecordDelayReport' | 'RecordOpen' | 'RecordClick'
  >,
  state: EmailState,
): EmailEvent[] {
  switch (command.type) {
    case 'RecordComplaint': {
      if (!state.exists || !wentOut(state.lifecycle)) return [];
      const recipient = command.recipient.toLowerCase();
      const r = state.recipients[recipient];
      if (!r || r.status === 'complained') return [];
      return [
        { type: 'EmailComplained', data: { emailId: command.emailId, recipient, complainedAt: command.at } },
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
}

export const emailDecider: Decider<EmailCommand, EmailEvent, EmailState> = {
  initialState: initialEmailState,
  evolve: evolveEmail,
  decide(command, state) {
    switch (command.type) {
      case 'StartDeliveryAttempt':
        return startAttempt(command, state);
      case 'RecordDeliveryOutcomes':
        return recordOutcomes(command, state);
      case 'RecordComplaint':
      case 'RecordBounceReport':
      case 'RecordDelayReport':
      case 'RecordOpen':
      case 'RecordClick':
        return recordReport(command, state);
      default:
        return decideLifecycle(command, state);
    }
  },
};
