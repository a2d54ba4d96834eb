import { classOfBounce } from '../../domain/emails/bounce-classes.ts';
import type { EmailEvent } from '../../domain/emails/email.events.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import { bounces, emailOutcomes } from '../../platform/metrics.ts';

/** The events `postline_emails_total` counts, by its `outcome` label. */
const OUTCOMES: Partial<Record<EmailEvent['type'], string>> = {
  EmailQueued: 'accepted',
  EmailScheduled: 'accepted',
  EmailDelivered: 'delivered',
  EmailDeliveryDelayed: 'delivery_delayed',
  EmailDelayReported: 'delivery_delayed',
  EmailBounced: 'bounced',
  EmailComplained: 'complained',
};

/** Counts the outcomes a command on an email appended (one that decided nothing appended nothing). */
export function countOutcomes<R extends { events: { type: string }[] }>(meta: EventMetadata, result: R): R {
  for (const e of result.events) {
    const outcome = OUTCOMES[e.type as EmailEvent['type']];
    if (outcome) emailOutcomes.inc({ outcome, mode: meta.mode });
    if (e.type === 'EmailBounced') {
      const { data } = e as Extract<EmailEvent, { type: 'EmailBounced' }>;
      bounces.inc({ classification: classOfBounce(data), type: data.bounceType, mode: meta.mode });
    }
  }
  return result;
}
