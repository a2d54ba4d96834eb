import type { Mode, TypedEvent } from '../../platform/eventstore/types.ts';
import type { BounceClass } from './bounce-classes.ts';

/**
 * The email aggregate's events, stream `email-<em_id>`. Internal schema: the webhooks team maps these to the
 * public, separately versioned payloads. Versioned by adding fields only. Every `data` has `emailId`; times are
 * ISO strings. Attachment bytes never enter the log: they sit in the blob store under `blobKey`.
 */

export interface EmailAttachmentRef {
  /** `att_…` */
  id: string;
  filename: string;
  contentType: string;
  /** For inline images referenced from the html as `cid:<contentId>`. */
  contentId?: string;
  /** Decoded size in bytes. */
  size: number;
  blobKey: string;
}

/** What was accepted, as it will be sent: templates are already rendered, suppressed recipients already dropped. */
export interface EmailContent {
  emailId: string;
  /** Also in the metadata; here too so the decider can answer 404 for another organization or mode. */
  orgId: string;
  mode: Mode;
  from: string;
  to: string[];
  cc: string[];
  bcc: string[];
  replyTo: string[];
  subject: string;
  html: string | null;
  text: string | null;
  headers: Record<string, string>;
  tags: string[];
  attachments: EmailAttachmentRef[];
  /** The sending domain's id; null for a test-mode email from a domain that is not registered. */
  domainId: string | null;
  domainName: string;
  templateId?: string;
  templateVersionId?: string;
  /** Addresses removed from to/cc/bcc because they are on the suppression list. */
  suppressedRecipients: string[];
  /** The topic the email is about (`topic_id`), and the addresses removed because it does not reach them. */
  topicId?: string;
  unsubscribedRecipients?: string[];
  createdAt: string;
  /**
   * A message submitted over SMTP: the bytes delivered as they are (only DKIM-signed), in the blob store. The
   * fields above are what was parsed from it, for the API; to, cc and bcc come from the envelope.
   */
  raw?: EmailRawMessage;
  /** An email of a broadcast: whom it was for, and the topic an unsubscribe from it leaves. */
  broadcast?: EmailBroadcastRef;
}

export interface EmailBroadcastRef {
  broadcastId: string;
  contactId: string;
  topicId: string | null;
}

export interface EmailRawMessage {
  blobKey: string;
  size: number;
  /** Its Message-ID header, the client's own or the one Postline added. */
  messageId: string;
}

export type EmailQueued = { type: 'EmailQueued'; data: EmailContent };
export type EmailScheduled = { type: 'EmailScheduled'; data: EmailContent & { sendAt: string } };
export type EmailRescheduled = { type: 'EmailRescheduled'; data: { emailId: string; sendAt: string } };
export type EmailCanceled = { type: 'EmailCanceled'; data: { emailId: string; canceledAt: string } };
/** A scheduled email fell due (scheduler); from here on it is handled like a queued one. */
export type EmailReleased = { type: 'EmailReleased'; data: { emailId: string; releasedAt: string } };
export type EmailSendingStarted = {
  type: 'EmailSendingStarted';
  data: { emailId: string; startedAt: string };
};
/**
 * The MTA is about to send to these recipients (lower-cased): recorded before the first byte of the look's SMTP
 * transactions goes out, so that a send cut short by a crash leaves a trace. `endsBy`: the attempt is over by
 * then in any process still alive (the MTA cuts what still runs at its time limit; `endsBy` adds a margin). A
 * recipient whose attempt has no outcome after `endsBy` has an unknown outcome: the message may have reached it.
 * `outcomeUnknown`: the recipients this attempt retries after such an attempt, who may get a second copy.
 */
export type EmailDeliveryAttemptStarted = {
  type: 'EmailDeliveryAttemptStarted';
  data: {
    emailId: string;
    recipients: string[];
    startedAt: string;
    endsBy: string;
    outcomeUnknown?: string[];
    /** The egress source the attempt leaves from, by name and address (only with a SOURCES_FILE). */
    source?: string;
    sourceAddress?: string;
  };
};
/** The message left Postline: composed, signed and handed to the first receiving server (or the simulator). */
export type EmailSent = { type: 'EmailSent'; data: { emailId: string; messageId: string; sentAt: string } };
export type EmailDelivered = {
  type: 'EmailDelivered';
  data: {
    emailId: string;
    recipient: string;
    smtpResponse: string;
    deliveredAt: string;
    mx?: string;
    tls?: boolean;
  };
};
export type EmailDeliveryDelayed = {
  type: 'EmailDeliveryDelayed';
  data: {
    emailId: string;
    recipient: string;
    /** The attempt that failed, 1-based; with `attempted: false`, the last one before it (0: none). */
    attempt: number;
    nextAttemptAt: string;
    smtpResponse: string;
    smtpCode?: number;
    /** No server was asked (no connection slot came free): the attempt did not count. */
    attempted?: false;
    /**
     * Why it was deferred, in the classes of bounces (domain/emails/bounce-classes.ts): `rate_limited`,
     * `mailbox_full`, `transient` (greylisting too), …; absent on events recorded before delays had classes
     * (`classOfDelay` gives them one from their reply).
     */
    classification?: BounceClass;
    delayedAt: string;
  };
};
export type EmailBounced = {
  type: 'EmailBounced';
  data: {
    emailId: string;
    recipient: string;
    /**
     * hard: a refusal that says the address is dead (its class suppresses); soft: any other refusal, or retries
     * exhausted. An event recorded before classes: hard is any 5xx.
     */
    bounceType: 'hard' | 'soft';
    /** Why (domain/emails/bounce-classes.ts); absent on events recorded before classes. */
    classification?: BounceClass;
    /** null when no server answered (DNS failure, refused connection) on the last attempt. */
    smtpCode: number | null;
    smtpResponse: string;
    bouncedAt: string;
  };
};
/**
 * A report that came back (a DSN with a transient status): the receiving side still tries to deliver. Postline's
 * own part is done, so the recipient's status stays as it was; the report is news for `email.delivery_delayed`.
 */
export type EmailDelayReported = {
  type: 'EmailDelayReported';
  data: {
    emailId: string;
    recipient: string;
    smtpCode: number | null;
    smtpResponse: string;
    reportedAt: string;
  };
};
export type EmailComplained = {
  type: 'EmailComplained';
  data: { emailId: string; recipient: string; complainedAt: string };
};
/**
 * Who opened or clicked: the IP address and user agent, recorded only for an organization that turned
 * `track_client_details` on, and then sealed (`client`: `{ip, userAgent}` sealed for `clientDetailsSubject`,
 * platform/personal-data.ts), so that deleting the key erases them. `userAgent` and `ip` in clear are what events
 * recorded before that rule hold: never shown, never sent.
 */
interface Engagement {
  emailId: string;
  client?: string;
  /** @deprecated Events of earlier versions only. */
  userAgent?: string;
  /** @deprecated Events of earlier versions only. */
  ip?: string;
}
export type EmailOpened = { type: 'EmailOpened'; data: Engagement & { openedAt: string } };
export type EmailClicked = { type: 'EmailClicked'; data: Engagement & { link: string; clickedAt: string } };

/** What `client` holds, once opened. */
export interface ClientDetails {
  ip: string;
  userAgent: string;
}

/** The subject an email's client details are sealed for: one key per email, named by its organization too. */
export const clientDetailsSubject = (orgId: string, emailId: string) => `client:${orgId}:${emailId}`;
/** The prefix of every such subject of an organization (to erase them all). */
export const clientDetailsSubjects = (orgId: string) => `client:${orgId}:`;

export type EmailEvent =
  | EmailQueued
  | EmailScheduled
  | EmailRescheduled
  | EmailCanceled
  | EmailReleased
  | EmailSendingStarted
  | EmailDeliveryAttemptStarted
  | EmailSent
  | EmailDelivered
  | EmailDeliveryDelayed
  | EmailBounced
  | EmailDelayReported
  | EmailComplained
  | EmailOpened
  | EmailClicked;

export const EMAIL_EVENT_TYPES: EmailEvent['type'][] = [
  'EmailQueued',
  'EmailScheduled',
  'EmailRescheduled',
  'EmailCanceled',
  'EmailReleased',
  'EmailSendingStarted',
  'EmailSent',
  'EmailDelivered',
  'EmailDeliveryDelayed',
  'EmailBounced',
  'EmailComplained',
  'EmailOpened',
  'EmailClicked',
];

export const emailStream = (emailId: string) => `email-${emailId}`;

/** Everyone the message goes to (to, cc, bcc), each once, compared case-insensitively. */
export function recipientsOf(content: Pick<EmailContent, 'to' | 'cc' | 'bcc'>): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const a of [...content.to, ...content.cc, ...content.bcc]) {
    const address = addressOnly(a).toLowerCase();
    if (!seen.has(address)) {
      seen.add(address);
      out.push(address);
    }
  }
  return out;
}

/** `Jane <jane@x.org>` -> `jane@x.org`. */
const addressOnly = (a: string) => /<([^<>]+)>\s*$/.exec(a)?.[1] ?? a.trim();

/** Stable for the email, so every attempt (and a replay after a crash) carries the same Message-ID. */
export const messageIdOf = (content: Pick<EmailContent, 'emailId' | 'domainName' | 'raw'>) =>
  content.raw?.messageId ?? `<${content.emailId}@${content.domainName}>`;

/** The email as accepted (queued or scheduled), from its stream; undefined when the stream holds none. */
export function acceptedContent(history: readonly TypedEvent[]): EmailContent | undefined {
  const accepted = history.find((e) => e.type === 'EmailQueued' || e.type === 'EmailScheduled');
  return accepted && (accepted.data as EmailContent);
}

/** An email ready to send from now on: queued, or released by the scheduler; undefined for any other event. */
export function readyToSend(e: TypedEvent): { emailId: string; since: string } | undefined {
  if (e.type === 'EmailQueued') {
    const { data } = e as EmailQueued;
    return { emailId: data.emailId, since: data.createdAt };
  }
  if (e.type === 'EmailReleased') {
    const { data } = e as EmailReleased;
    return { emailId: data.emailId, since: data.releasedAt };
  }
  return undefined;
}
