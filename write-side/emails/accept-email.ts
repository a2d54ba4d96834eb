import { emailDecider } from '../../domain/emails/email.decider.ts';
import {
  type EmailContent,
  type EmailQueued,
  type EmailScheduled,
  emailStream,
} from '../../domain/emails/email.events.ts';
import { AppError, invalidField } from '../../platform/errors.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import type { BlobRow, EventMetadata, StoredEvent } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { findUnstorableText, UNSTORABLE_TEXT } from '../../platform/unstorable-text.ts';
import { withPathsFetched } from './attachment-paths.ts';
import { deliverable } from './deliverable-recipients.ts';
import { emailBody } from './email-body.ts';
import type { Accepted, EmailDraft } from './email-draft.ts';
import { attachmentBytes, checkHeaders, checkRecipients, checkSendAt } from './email-limits.ts';
import { countOutcomes } from './email-outcomes.ts';
import { sendingDomain } from './sending-domain.ts';
import { withTopicUnsubscribe } from './topic-unsubscribe.ts';

/** The read models an accepted email is read from: a send's answer waits for them (read-your-writes). */
export const EMAIL_PROJECTIONS = ['emails'];

/**
 * Accepts an email, whichever entrance it came through (the API, the SMTP relay, a broadcast): the answer of an
 * earlier attempt, then the limits, the sending domain, the text, its storability, the suppression list and the
 * topic, the attachments given by URL, the topic's unsubscribe link, the quota, and the append (EmailQueued or
 * EmailScheduled). A step that refuses throws an AppError naming the field; nothing is written before the quota.
 */
export async function acceptEmail(
  services: Services,
  meta: EventMetadata,
  draft: EmailDraft,
): Promise<Accepted> {
  const earlier = draft.resumed ? await acceptedAs(services, draft.emailId) : undefined;
  if (earlier) return earlier;
  const now = draft.at ?? services.clock.now();
  const { sendAt, attachments: given } = limits(draft, now);
  const { bounceDomain, ...domain } = await sendingDomain(services, draft.sender);
  const body = await emailBody(services, meta, draft.body);
  storable(draft, body);
  const recipients = await deliverable(services, draft);
  const attachments = await withPathsFetched(services.config, given);
  const { headers, raw } = withTopicUnsubscribe(services, draft, recipients, bounceDomain);
  await draft.quota(now);
  const content = {
    emailId: draft.emailId,
    orgId: meta.orgId,
    mode: meta.mode,
    from: draft.from,
    ...recipients,
    replyTo: draft.replyTo,
    subject: body.subject,
    html: body.html,
    text: body.text,
    headers,
    tags: draft.tags,
    ...domain,
    ...(body.templateId && { templateId: body.templateId, templateVersionId: body.templateVersionId }),
    ...(draft.topicId && { topicId: draft.topicId }),
    createdAt: now.toISOString(),
  };
  return append(services, meta, { content, attachments, raw, sendAt, broadcast: draft.broadcast });
}

/** The limits every email keeps: recipients, `send_at`, custom headers, attachments. */
function limits(draft: EmailDraft, now: Date) {
  checkRecipients(draft);
  const sendAt = checkSendAt(draft.sendAt, now);
  checkHeaders(draft.headers);
  return { sendAt, attachments: attachmentBytes(draft.attachments, now.getTime()) };
}

/**
 * Nothing is appended that the stores cannot hold (a lone surrogate, a NUL): the last word on every field of the
 * email as it will be recorded. Each door refuses such text first in its own terms (every JSON body in app.ts,
 * the MIME parse in smtp/submission.ts, rendered templates in the sandbox), so this names what a door missed.
 */
function storable(draft: EmailDraft, body: { subject: string; html: string | null; text: string | null }) {
  const { from, to, cc, bcc, replyTo, headers, tags, attachments } = draft;
  const field = findUnstorableText({
    from,
    to,
    cc,
    bcc,
    replyTo,
    subject: body.subject,
    html: body.html,
    text: body.text,
    headers,
    tags,
    attachments: attachments.map((a) => a.filename),
  });
  if (field !== undefined) throw invalidField(field, UNSTORABLE_TEXT);
}

interface Checked {
  content: Omit<EmailContent, 'attachments' | 'raw' | 'broadcast'>;
  attachments: Awaited<ReturnType<typeof withPathsFetched>>;
  raw?: EmailDraft['raw'];
  sendAt?: string;
  broadcast?: EmailDraft['broadcast'];
}

/**
 * Stores the attachment bytes and a submitted message's (the log gets their keys) with EmailQueued or
 * EmailScheduled: small ones in the event's commit, larger ones synced before it. An email queued already under
 * the chosen id (an earlier attempt's) is the answer.
 */
async function append(services: Services, meta: EventMetadata, checked: Checked): Promise<Accepted> {
  const blobs = services.blobs;
  const { raw: submitted, sendAt, broadcast } = checked;
  const rows: BlobRow[] = [];
  const stage = async (bytes: Buffer) => {
    const { key, row } = await blobs.stage(bytes, services.clock.now().getTime());
    if (row) rows.push(row);
    return key;
  };
  // Files are written side by side: each waits for its own sync, and they share their folder's.
  const [attachments, raw] = await Promise.all([
    Promise.all(
      checked.attachments.map(async ({ bytes, ...rest }) => ({
        ...rest,
        size: bytes.length,
        blobKey: await stage(bytes),
      })),
    ),
    submitted &&
      stage(submitted.bytes).then((blobKey) => ({
        blobKey,
        size: submitted.bytes.length,
        messageId: submitted.messageId,
      })),
  ]);
  const content = { ...checked.content, attachments, ...(raw && { raw }), ...(broadcast && { broadcast }) };
  const result = await handleCommand(
    services.store,
    emailStream(content.emailId),
    emailDecider,
    { type: 'QueueEmail', content, sendAt },
    meta,
    { history: [], blobs: rows },
  ).catch(async (error) => {
    // An id chosen in advance (Idempotency-Key, a broadcast's) that another attempt queued first: that email is
    // this attempt's answer.
    const earlier =
      error instanceof AppError && error.code === 'conflict' && (await acceptedAs(services, content.emailId));
    if (earlier) return earlier;
    throw error;
  });
  if ('id' in result) return result;
  blobs.committed(rows);
  countOutcomes(meta, result);
  return {
    id: content.emailId,
    status: sendAt ? 'scheduled' : 'queued',
    ...(sendAt && { sendAt }),
    suppressedRecipients: content.suppressedRecipients,
    ...(content.unsubscribedRecipients && { unsubscribedRecipients: content.unsubscribedRecipients }),
    position: result.position,
    recorded: { ...result.events[0], metadata: meta },
  };
}

/** The email `emailId` as it was accepted, if it exists: what an earlier attempt of a request committed. */
async function acceptedAs(services: Pick<Services, 'store'>, emailId: string): Promise<Accepted | undefined> {
  const [first] = await services.store.readStream(emailStream(emailId));
  if (first?.type !== 'EmailQueued' && first?.type !== 'EmailScheduled') return undefined;
  const data = (first as StoredEvent<EmailQueued['type'] | EmailScheduled['type'], EmailScheduled['data']>)
    .data;
  return {
    id: emailId,
    status: first.type === 'EmailScheduled' ? 'scheduled' : 'queued',
    ...(first.type === 'EmailScheduled' && { sendAt: data.sendAt }),
    suppressedRecipients: data.suppressedRecipients,
    ...(data.unsubscribedRecipients && { unsubscribedRecipients: data.unsubscribedRecipients }),
    position: first.position,
  };
}
