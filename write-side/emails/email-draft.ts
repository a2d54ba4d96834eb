import type { Mailbox } from '../../domain/emails/addresses.ts';
import type { EmailBroadcastRef } from '../../domain/emails/email.events.ts';
import type { AuthContext } from '../../platform/auth/auth-context.ts';
import type { Position } from '../../platform/eventstore/types.ts';
import type { AppendedEvent } from '../../platform/services.ts';

/**
 * An email as an entrance hands it to `acceptEmail`: the API turns a JSON body into it, the SMTP relay a MIME
 * message, the broadcast expansion a contact of the audience. Nothing in it is checked yet, except what the
 * entrance's own input form requires (mailboxes parsed, `to` given).
 */
export interface EmailDraft {
  /** Chosen in advance under an idempotency key, derived from the broadcast and contact, or new. */
  emailId: string;
  /** `resumed`: an earlier attempt with the same chosen id never finished, so it may have accepted it already. */
  resumed?: boolean;
  /** The From mailbox as the email shows it. */
  from: string;
  to: Mailbox[];
  cc: Mailbox[];
  bcc: Mailbox[];
  replyTo: string[];
  body: DraftBody;
  headers: Record<string, string>;
  tags: string[];
  attachments: DraftAttachment[];
  /**
   * A message submitted over SMTP, delivered as these bytes; `listUnsubscribe`: its header section names a
   * List-Unsubscribe of its own.
   */
  raw?: { bytes: Buffer; messageId: string; listUnsubscribe: boolean };
  /** As requested: checked against the clock by the pipeline. */
  sendAt?: string;
  broadcast?: EmailBroadcastRef;
  /** The topic the email is about (`topic_id`): only the recipients it reaches get it (deliverable-recipients.ts). */
  topicId?: string;
  sender: Sender;
  /**
   * When it is accepted, where the entrance accepts several emails as one (a batch, a broadcast's page): their quota
   * is taken once, in the month of this time. Else the pipeline reads the clock.
   */
  at?: Date;
  /**
   * Takes this email's share of the quota of the month it is accepted in (`at`, its `created_at`); throws
   * `monthly_quota_exceeded` when none is left.
   */
  quota: (at: Date) => Promise<void>;
}

/**
 * Who sends. An API key (API and SMTP): the From domain must be one the key may send from, verified for a live
 * key, and the organization's suppression list applies. A broadcast: its domain was checked when it was sent, and
 * its audience query left the suppressed contacts out.
 */
export type Sender =
  | { key: AuthContext; fromDomain: string }
  | { broadcast: { domainId: string | null; domainName: string } };

/** Text as it goes out, or a request's fields (text of its own or a template with data) still to check. */
export type DraftBody =
  | { ready: ReadyBody }
  | {
      requested: {
        subject?: string;
        html?: string;
        text?: string;
        templateId?: string;
        templateData?: Record<string, unknown>;
      };
    };

export interface ReadyBody {
  subject: string;
  html: string | null;
  text: string | null;
  templateId?: string;
  templateVersionId?: string;
}

/**
 * Bytes, base64 as a JSON body carries them (decoded and counted by the pipeline's limits), or the URL of a file
 * to fetch (an attachment's `path`, attachment-paths.ts).
 */
export interface DraftAttachment {
  filename: string;
  contentType: string;
  contentId?: string;
  content: Buffer | { base64: string } | { url: string };
}

export interface Accepted {
  id: string;
  status: 'queued' | 'scheduled';
  sendAt?: string;
  suppressedRecipients: string[];
  /** With a topic: the recipients it does not reach, left out. */
  unsubscribedRecipients?: string[];
  position?: Position;
  /** What this attempt appended (none when an earlier attempt did): its send may write its row (readable-email.ts). */
  recorded?: AppendedEvent;
}
