import { classOfBounce, classOfDelay } from '../../domain/emails/bounce-classes.ts';
import {
  type ClientDetails,
  clientDetailsSubject,
  type EmailEvent,
} from '../../domain/emails/email.events.ts';
import { deliveredSmtpCode, publicEmailEventType } from '../../domain/emails/public-event-types.ts';
import type { Queryable } from '../../platform/db/database.ts';
import type { StoredEvent } from '../../platform/eventstore/types.ts';
import { openPersonalDataMany } from '../../platform/personal-data.ts';

/**
 * An email's history as the API shows it (`EmailEvent` in emails.response.ts): each event under its public
 * name, with the fields documented for it and nothing else. The internal events hold more (the content again,
 * the organization, who acted); none of it leaves. Who opened or clicked is shown only where it was recorded
 * (the organization's `track_client_details`) and its key is still there; else `ip` and `user_agent` are null.
 */
export async function publicHistory(db: Queryable, stream: StoredEvent[]) {
  const events = stream as (StoredEvent & EmailEvent)[];
  const clients = await openClients(db, events);
  /** Each recipient's last failed attempt, as the history goes on. */
  const failed = new Map<string, number>();
  const out = [];
  for (const [i, e] of events.entries()) {
    const type = publicEmailEventType(e.type);
    if (!type) continue;
    const at = (recipient: string | null, data: Record<string, unknown>) => ({
      object: 'email_event',
      type,
      created_at: e.createdAt.toISOString(),
      recipient,
      data,
    });
    const client = () => ({ ip: clients[i]?.ip ?? null, user_agent: clients[i]?.userAgent ?? null });
    switch (e.type) {
      case 'EmailScheduled':
        out.push(at(null, { send_at: e.data.sendAt }));
        break;
      case 'EmailRescheduled':
        out.push(at(null, { send_at: e.data.sendAt }));
        break;
      case 'EmailSent':
        out.push(at(null, { message_id: e.data.messageId }));
        break;
      case 'EmailDelivered': {
        const d = e.data;
        out.push(
          at(d.recipient, {
            attempt: (failed.get(d.recipient) ?? 0) + 1,
            smtp_code: deliveredSmtpCode(d.smtpResponse),
            smtp_response: d.smtpResponse,
            mx: d.mx ?? null,
            tls: d.tls ?? null,
          }),
        );
        break;
      }
      case 'EmailDeliveryDelayed': {
        const d = e.data;
        failed.set(d.recipient, d.attempt);
        out.push(
          at(d.recipient, {
            // A wait for a connection slot was no attempt.
            attempt: d.attempted === false ? null : d.attempt,
            next_attempt_at: d.nextAttemptAt,
            smtp_code: d.smtpCode ?? null,
            smtp_response: d.smtpResponse,
            source: 'attempt',
            classification: classOfDelay(d),
          }),
        );
        break;
      }
      case 'EmailDelayReported': {
        const d = e.data;
        out.push(
          at(d.recipient, {
            attempt: null,
            next_attempt_at: null,
            smtp_code: d.smtpCode,
            smtp_response: d.smtpResponse,
            source: 'report',
            classification: classOfDelay(d),
          }),
        );
        break;
      }
      case 'EmailBounced': {
        const d = e.data;
        out.push(
          at(d.recipient, {
            bounce_type: d.bounceType,
            classification: classOfBounce(d),
            smtp_code: d.smtpCode,
            smtp_response: d.smtpResponse,
          }),
        );
        break;
      }
      case 'EmailComplained':
        out.push(at(e.data.recipient, {}));
        break;
      case 'EmailOpened':
        out.push(at(null, client()));
        break;
      case 'EmailClicked':
        out.push(at(null, { link: e.data.link, ...client() }));
        break;
      default:
        // Queued, released, sending, canceled: the name and the time say it all.
        out.push(at(null, {}));
    }
  }
  return out;
}

/** The client details of each open and click that has them, opened with one look-up of their keys. */
async function openClients(db: Queryable, events: (StoredEvent & EmailEvent)[]) {
  const sealed = events.flatMap((e, i) =>
    (e.type === 'EmailOpened' || e.type === 'EmailClicked') && e.data.client
      ? [{ i, subject: clientDetailsSubject(e.metadata.orgId, e.data.emailId), sealed: e.data.client }]
      : [],
  );
  const opened = await openPersonalDataMany<ClientDetails>(db, sealed);
  const byIndex: (ClientDetails | null)[] = [];
  for (const [n, s] of sealed.entries()) byIndex[s.i] = opened[n];
  return byIndex;
}
