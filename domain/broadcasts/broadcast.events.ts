import type { Mode } from '../../platform/eventstore/types.ts';
import type { Plan } from '../../platform/tenancy.ts';

export type BroadcastStatus = 'draft' | 'scheduled' | 'sending' | 'sent' | 'canceled';

/**
 * What a broadcast sends, as its author wrote it: `subject`, `html` and `text` are Handlebars sources rendered per
 * contact (broadcast-content.ts), or `templateId` names a published template rendered the same way.
 */
export interface BroadcastContent {
  name: string;
  audienceId: string;
  topicId: string | null;
  from: string;
  replyTo: string[];
  subject: string | null;
  html: string | null;
  text: string | null;
  templateId: string | null;
  /**
   * The preheader, the line an inbox shows after the subject (Resend's `preview_text`): plain text, hidden at the
   * top of the html. Absent in broadcasts made before it existed.
   */
  previewText?: string | null;
}

/** Contacts of the audience that were not sent to, by reason. */
export interface SkippedRecipients {
  unsubscribed: number;
  suppressed: number;
  /** Not subscribed to the broadcast's topic. */
  notSubscribed: number;
  /** Beyond the month's quota (Free). */
  quota: number;
  /** Its email could not be rendered (the reason is logged). */
  failed: number;
}

/**
 * How a broadcast's email ids are made from it and its contacts (processes/broadcasts/broadcast-email.ts): the same
 * for the whole broadcast, so that a page done again after a crash, by whichever version, finds its emails.
 * `contact-ordered`: in the contacts' order after the broadcast's start; `hashed`: a digest of the broadcast and
 * the contact (a broadcast whose start recorded no scheme).
 */
export type EmailIdScheme = 'hashed' | 'contact-ordered';

export type BroadcastEvent =
  | {
      type: 'BroadcastCreated';
      data: { broadcastId: string; orgId: string; mode: Mode; createdAt: string } & BroadcastContent;
    }
  /** The content as it is now. */
  | { type: 'BroadcastUpdated'; data: { broadcastId: string; updatedAt: string } & BroadcastContent }
  | { type: 'BroadcastDeleted'; data: { broadcastId: string; deletedAt: string } }
  /** `plan`: the organization's plan when it was sent, for the quota its emails count against. */
  | {
      type: 'BroadcastScheduled';
      data: { broadcastId: string; sendAt: string; plan: Plan; scheduledAt: string };
    }
  /** A scheduled broadcast canceled before its time: a draft again, to change, send or schedule anew (as Resend's). */
  | { type: 'BroadcastUnscheduled'; data: { broadcastId: string; unscheduledAt: string } }
  /**
   * Stopped while sending: no more of its audience gets an email, and its emails the MTA has not started on are
   * canceled. Earlier versions recorded it for a canceled scheduled broadcast (which had no emails).
   */
  | { type: 'BroadcastCanceled'; data: { broadcastId: string; canceledAt: string } }
  /**
   * The expansion into emails begins: now (send without `send_at`) or when a scheduled broadcast falls due.
   * `emailIds`: how its emails' ids are made (EmailIdScheme); absent in a broadcast started before the scheme was
   * recorded, whose ids are `hashed`.
   */
  | {
      type: 'BroadcastSendingStarted';
      data: { broadcastId: string; plan: Plan; startedAt: string; emailIds?: EmailIdScheme };
    }
  /**
   * One batch of the audience turned into emails: the contacts after `after` up to `cursor` (contact ids, in
   * order), of which `queued` got an email and the others were skipped.
   */
  | {
      type: 'BroadcastBatchExpanded';
      data: {
        broadcastId: string;
        after: string;
        cursor: string;
        queued: number;
        skipped: SkippedRecipients;
        expandedAt: string;
      };
    }
  /** Every recipient has its email. */
  | { type: 'BroadcastSent'; data: { broadcastId: string; sentAt: string } };

export const broadcastStream = (broadcastId: string) => `broadcast-${broadcastId}`;
