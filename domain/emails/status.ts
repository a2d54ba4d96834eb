/**
 * How an email's status follows from its lifecycle and its recipients' outcomes. One function, used by the
 * decider and by the `emails` projection, so the API and the business rules never disagree. docs/emails.md
 * has the table.
 */

export type EmailStatus =
  | 'queued'
  | 'scheduled'
  | 'sending'
  | 'sent'
  | 'delivered'
  | 'bounced'
  | 'complained'
  | 'canceled';
export const EMAIL_STATUSES: EmailStatus[] = [
  'queued',
  'scheduled',
  'sending',
  'sent',
  'delivered',
  'bounced',
  'complained',
  'canceled',
];

/** The statuses of an email that left Postline: sent, whatever became of it since (a broadcast's `counts.sent`). */
export const LEFT_POSTLINE: EmailStatus[] = ['sent', 'delivered', 'bounced', 'complained'];
/** The same as an SQL list, for a query's `status IN (…)`. */
export const LEFT_POSTLINE_SQL = LEFT_POSTLINE.map((s) => `'${s}'`).join(', ');

/** Lifecycle before any recipient outcome counts. */
export type Lifecycle = 'queued' | 'scheduled' | 'canceled' | 'sending' | 'sent';

export type RecipientStatus = 'pending' | 'delayed' | 'delivered' | 'bounced' | 'complained';

/**
 * Several recipients roll up into one status: a complaint from anyone wins (it is what the sender must act on);
 * until every recipient has a final outcome the email stays `sent`; then `delivered` if anyone got it, else
 * `bounced`. Per-recipient outcomes stay visible on the email. An email still `sending` (nothing of it left
 * Postline) whose every recipient bounced (no sending domain until its retries ran out, or given up by the
 * operator) is `bounced` all the same.
 */
export function rollUp(lifecycle: Lifecycle, recipients: RecipientStatus[]): EmailStatus {
  const over = lifecycle === 'sending' && recipients.length > 0 && recipients.every(isFinal);
  if (lifecycle !== 'sent' && !over) return lifecycle;
  if (recipients.includes('complained')) return 'complained';
  if (recipients.some((r) => r === 'pending' || r === 'delayed')) return 'sent';
  return recipients.includes('delivered') ? 'delivered' : 'bounced';
}

export const isFinal = (r: RecipientStatus) => r === 'delivered' || r === 'bounced' || r === 'complained';
