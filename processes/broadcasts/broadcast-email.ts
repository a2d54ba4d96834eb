import { hash } from 'node:crypto';
import type { BroadcastContent, EmailIdScheme } from '../../domain/broadcasts/broadcast.events.ts';
import { type RecipientData, withFooter, withPreheader } from '../../domain/broadcasts/broadcast-content.ts';
import { listUnsubscribeHeaders } from '../../domain/emails/list-unsubscribe.ts';
import { sentSubject } from '../../domain/templates/content-rules.ts';
import { partRenderer } from '../../domain/templates/sandbox.ts';
import { AppError } from '../../platform/errors.ts';
import { base32, encodeTime } from '../../platform/ids.ts';
import type { AudienceRecipient } from '../../read-side/contacts/contacts.queries.ts';
import type { SendingDomain } from '../../read-side/domains/domains.queries.ts';
import type { PublishedVersion } from '../../read-side/templates/templates.queries.ts';
import { unsubscribeMailbox } from '../../write-side/broadcasts/unsubscribe.commands.ts';
import type { EmailDraft, ReadyBody } from '../../write-side/emails/email-draft.ts';
import { versionRenderer } from '../../write-side/templates/render.ts';

/**
 * The email ids contacts get from a broadcast: the same on every attempt, so a step done again after a crash
 * finds the emails it queued before (their streams exist) instead of sending them twice; made as the broadcast
 * recorded when it started (`scheme`), whichever version does it again. Time-ordered by the broadcast's start, like
 * every id, then (`contact-ordered`) in about the order pages read the contacts in, so that a broadcast's emails
 * go to the end of the log's and the read model's indexes instead of all over them (scattered, as `hashed` ones
 * are, they took PostgreSQL a fifth more time an email in a broadcast to 100,000 contacts): a contact id's body
 * starts with its time and ends with what orders the contacts of one millisecond (or of one import: the row). A
 * digest of the broadcast and the contact tells apart broadcasts started in the same millisecond. At most 35
 * characters: the email's unsubscribe token must fit an address's local part
 * (domain/broadcasts/unsubscribe-token.ts).
 */
export function broadcastEmailIds(
  broadcastId: string,
  startedAt: string,
  scheme: EmailIdScheme,
): (contactId: string) => string {
  const started = encodeTime(Date.parse(startedAt));
  const digest = (contactId: string) => hash('sha256', `${broadcastId}\0${contactId}`, 'buffer');
  if (scheme === 'hashed') return (contactId) => `em_${started}${base32(digest(contactId).subarray(0, 10))}`;
  return (contactId) => {
    const contact = contactId.slice(contactId.indexOf('_') + 1);
    const order = `${contact.slice(0, 10)}${contact.slice(-7)}`;
    return `em_${started}${order}${base32(digest(contactId).subarray(0, 4)).slice(0, 5)}`;
  };
}

type Text = Pick<ReadyBody, 'subject' | 'html' | 'text'>;
export type Renderer = (data: RecipientData) => Text;

/**
 * The broadcast's text for one contact: its template's published version, or its own sources. A broadcast with a
 * template has no sources of its own (they are blank): without the version there is nothing to send, and this
 * throws rather than render an empty email for every contact.
 */
export function renderer(
  broadcastId: string,
  content: BroadcastContent,
  version: PublishedVersion | null,
): Renderer {
  if (content.templateId && !version)
    throw new Error(
      `Broadcast ${broadcastId}: template ${content.templateId} has no published version to render`,
    );
  const own = (part: 'subject' | 'html' | 'text', source: string) => {
    const render = partRenderer(`broadcast ${broadcastId}`, part, source);
    return (data: RecipientData) => render(data as unknown as Record<string, unknown>);
  };
  const subjectPart = own('subject', content.subject ?? '');
  const subjectOf = (data: RecipientData) => {
    const subject = subjectPart(data);
    if (/[\r\n]/.test(subject))
      throw new AppError('template_render_error', 'The rendered subject contains a line break.');
    return subject;
  };
  if (version) {
    const render = versionRenderer(version);
    return (data) => {
      const r = render(data as unknown as Record<string, unknown>);
      return {
        subject: sentSubject(content.subject ? subjectOf(data) : r.subject),
        html: r.html === null ? null : withPreheader(r.html, content.previewText),
        text: r.text,
      };
    };
  }
  const html = content.html === null ? null : own('html', content.html);
  const text = content.text === null ? null : own('text', content.text);
  return (data) => ({
    subject: sentSubject(subjectOf(data)),
    html: html ? withPreheader(html(data), content.previewText) : null,
    text: text ? text(data) : null,
  });
}

/** What every email of one step shares. */
export interface BroadcastSending {
  broadcastId: string;
  content: BroadcastContent;
  topicId: string | null;
  /** The topic's default subscription when the broadcast names one that exists (null: none named, or it is gone). */
  topicDefault: 'opt_in' | 'opt_out' | null;
  domain: Pick<SendingDomain, 'id' | 'name' | 'impressum'> | null;
  domainName: string;
  version: PublishedVersion | null;
  /**
   * The text of the broadcast for one contact (`renderer`); null when its template has no published version any
   * more (deleted after the broadcast was sent): then no contact gets an email.
   */
  render: Renderer | null;
  /** The id of a contact's email (broadcastEmailIds). */
  emailIdOf: (contactId: string) => string;
  /** `https://…/unsubscribe/` and the List-Unsubscribe mailto's domain (where the emails' bounces go). */
  unsubscribeBase: string;
  returnPath: string;
}

/** A sending that has its text: the one its emails are rendered from. */
export type RenderableSending = BroadcastSending & { render: Renderer };

export const hasText = (sending: BroadcastSending): sending is RenderableSending => sending.render !== null;

/**
 * A contact of the audience as a draft for `acceptEmail`: its text rendered with the contact's data and the
 * footer, its unsubscribe link (page and mailto). The step took the quota for its page before.
 */
export function broadcastDraft(
  b: BroadcastSending,
  r: AudienceRecipient,
  emailId: string,
  token: string,
  text: Text,
): EmailDraft {
  const unsubscribeUrl = `${b.unsubscribeBase}${token}`;
  return {
    emailId,
    from: b.content.from,
    to: [{ name: [r.first_name, r.last_name].filter(Boolean).join(' ') || null, address: r.email }],
    cc: [],
    bcc: [],
    replyTo: b.content.replyTo,
    body: {
      ready: {
        subject: text.subject,
        ...withFooter(text, b.domain?.impressum ?? null, unsubscribeUrl),
        ...(b.version && { templateId: b.version.templateId, templateVersionId: b.version.versionId }),
      },
    },
    headers: listUnsubscribeHeaders(unsubscribeUrl, unsubscribeMailbox(token, b.returnPath)),
    tags: [],
    attachments: [],
    broadcast: { broadcastId: b.broadcastId, contactId: r.id, topicId: b.topicId },
    sender: { broadcast: { domainId: b.domain?.id ?? null, domainName: b.domain?.name ?? b.domainName } },
    quota: async () => {},
  };
}
