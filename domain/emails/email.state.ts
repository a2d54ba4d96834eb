import type { Mode } from '../../platform/eventstore/types.ts';
import { type EmailEvent, recipientsOf } from './email.events.ts';
import { type EmailStatus, type Lifecycle, type RecipientStatus, rollUp } from './status.ts';

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

/** The state an email's events fold to, event by event (the decider's `evolve`). */
export function evolveEmail(state: EmailState, event: EmailEvent): EmailState {
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

export const initialEmailState: EmailState = { exists: false };

/** The state an email's stream folds to: what a process reads to choose its next command. */
export const foldEmail = (history: readonly { type: string; data: unknown }[]): EmailState =>
  history.reduce<EmailState>((s, e) => evolveEmail(s, e as EmailEvent), initialEmailState);
