import type { EmailEvent } from './email.events.ts';

/**
 * The public names of an email's events: what `GET /v1/emails/{id}/events` and an Email's `last_event` show.
 * Where a webhook exists for an event, the name is the webhook's (`email.delivered`, never `EmailDelivered`);
 * internal event types may change, these names are the contract.
 */
export const EMAIL_HISTORY_TYPES = [
  'email.queued',
  'email.scheduled',
  'email.rescheduled',
  'email.released',
  'email.canceled',
  'email.sending',
  'email.sent',
  'email.delivered',
  'email.delivery_delayed',
  'email.bounced',
  'email.complained',
  'email.opened',
  'email.clicked',
] as const;

export type EmailHistoryType = (typeof EMAIL_HISTORY_TYPES)[number];

/**
 * Each internal event's public name; `null` keeps an event out of the history: the MTA's record that an attempt
 * began is its own bookkeeping (the attempt's outcome is the public event). Typed over every
 * email event, so a new internal event does not compile until someone decides what the public sees of it.
 */
export const PUBLIC_EMAIL_EVENT_TYPE: Record<EmailEvent['type'], EmailHistoryType | null> = {
  EmailQueued: 'email.queued',
  EmailScheduled: 'email.scheduled',
  EmailRescheduled: 'email.rescheduled',
  EmailReleased: 'email.released',
  EmailCanceled: 'email.canceled',
  EmailSendingStarted: 'email.sending',
  EmailDeliveryAttemptStarted: null,
  EmailSent: 'email.sent',
  EmailDelivered: 'email.delivered',
  EmailDeliveryDelayed: 'email.delivery_delayed',
  EmailDelayReported: 'email.delivery_delayed',
  EmailBounced: 'email.bounced',
  EmailComplained: 'email.complained',
  EmailOpened: 'email.opened',
  EmailClicked: 'email.clicked',
};

/** The public name of an internal email event type, or null for one the public does not see. */
export const publicEmailEventType = (internal: string): EmailHistoryType | null =>
  (PUBLIC_EMAIL_EVENT_TYPE as Record<string, EmailHistoryType | null>)[internal] ?? null;

/**
 * The SMTP code of a delivery's answer: its first three digits. The answer to the end of DATA can only be 250
 * when it accepts (RFC 5321, 4.3.2), so an answer without a code (none seen) counts as 250.
 */
export const deliveredSmtpCode = (smtpResponse: string): number => {
  const code = /^(2\d\d)(?:[ -]|$)/.exec(smtpResponse)?.[1];
  return code ? Number(code) : 250;
};
