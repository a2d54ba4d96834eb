import { hash } from 'node:crypto';
import type { BroadcastContent, SkippedRecipients } from '../../domain/broadcasts/broadcast.events.ts';
import type { RecipientData } from '../../domain/broadcasts/broadcast-content.ts';
import { withFooter } from '../../domain/broadcasts/broadcast-content.ts';
import { envelopeDomain, installationBounceDomain } from '../../domain/domains/dns-records.ts';
import { domainOf, formatMailbox, parseMailbox } from '../../domain/emails/addresses.ts';
import type { EmailContent } from '../../domain/emails/email.events.ts';
import { renderPart } from '../../domain/templates/sandbox.ts';
import { AppError } from '../../platform/errors.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import { base32, encodeTime } from '../../platform/ids.ts';
import type { Services } from '../../platform/services.ts';
import { type AudienceRecipient, audienceRecipients } from '../../read-side/contacts/contacts.queries.ts';
import { findSendingDomain } from '../../read-side/domains/domains.queries.ts';
import { findPublishedVersion, type PublishedVersion } from '../../read-side/templates/templates.queries.ts';
import { findTopic } from '../../read-side/topics/topics.queries.ts';
import { acceptPrepared, consumeQuota } from '../emails/email.commands.ts';
import { renderVersion } from '../templates/render.ts';
import { readBroadcast, runBroadcast } from './broadcast.commands.ts';
import { unsubscribeMailbox } from './unsubscribe.commands.ts';

/**
 * The email id a contact gets from a broadcast: the same on every attempt, so a step done again after a crash
 * finds the emails it queued before (their streams exist) instead of sending them twice. Time-ordered by the
 * broadcast's start, like every id.
 */
export function broadcastEmailId(broadcastId: string, contactId: string, startedAt: string): string {
  const digest = hash('sha256', `${broadcastId}\0${contactId}`, 'buffer');
  return `em_${encodeTime(Date.parse(startedAt))}${base32(digest.subarray(0, 10))}`;
}

/** Why a contact is not sent to, or null when it is. */
function skipReason(
  r: AudienceRecipient,
  topicDefault: 'opt_in' | 'opt_out' | null,
): keyof SkippedRecipients | null {
  if (r.unsubscribed) return 'unsubscribed';
  if (r.suppressed) return 'suppressed';
  if (topicDefault && (r.subscription ?? topicDefault) !== 'opt_in') return 'notSubscribed';
  return null;
}

type Renderer = (data: RecipientData) => { subject: string; html: string | null; text: string | null };

function renderer(
  broadcastId: string,
  content: BroadcastContent,
  version: PublishedVersion | null,
): Renderer {
  const own = (part: 'subject' | 'html' | 'text', source: string, data: RecipientData) =>
    renderPart(`broadcast ${broadcastId}`, part, source, data as unknown as Record<string, unknown>);
  const subjectOf = (data: RecipientData) => {
    const subject = own('subject', content.subject ?? '', data);
    if (/[\r\n]/.test(subject))
      throw new AppError('template_render_error', 'The rendered subject contains a line break.');
    return subject;
  };
  if (version)
    return (data) => {
      const r = renderVersion(version, data as unknown as Record<string, unknown>);
      return { subject: content.subject ? subjectOf(data) : r.subject, html: r.html, text: r.text };
    };
  return (data) => ({
    subject: subjectOf(data),
    html: content.html === null ? null : own('html', content.html, data),
    text: content.text === null ? null : own('text', content.text, data),
  });
}

/** Emails rendered and handed to the store between two turns of the event loop. */
const SLICE = 50;

const noneSkipped = (): SkippedRecipients => ({
  unsubscribed: 0,
  suppressed: 0,
  notSubscribed: 0,
  quota: 0,
  failed: 0,
});

/**
 * One step of a broadcast's sending: a scheduled broadcast that is due starts; then the next contacts of its
 * audience (after the cursor) become ordinary emails, each queued under its own id, and the step is recorded on the
 * broadcast (`BroadcastBatchExpanded`, and `BroadcastSent` after the last). Safe to run again: the emails of a step
 * keep their ids, and a step recorded already is not recorded twice. Returns when the next step is due (null: the
 * broadcast needs none), and how many emails this one queued.
 */
export async function expandNextBatch(
  services: Services,
  broadcastId: string,
): Promise<{ next: Date | null; queued: number }> {
  let { state } = await readBroadcast(services, broadcastId);
  if (!state.exists || state.deleted) return { next: null, queued: 0 };
  const meta: EventMetadata = { orgId: state.orgId, mode: state.mode, actor: 'system' };
  const decide = (command: Parameters<typeof runBroadcast>[3]) =>
    runBroadcast(services, meta, broadcastId, command);
  if (state.status === 'scheduled') state = (await decide({ type: 'StartSending' })).state;
  if (!state.exists) return { next: null, queued: 0 };
  // Not due yet (rescheduled): its time; canceled or finished meanwhile: nothing more.
  if (state.status === 'scheduled') return { next: new Date(state.sendAt!), queued: 0 };
  if (state.status !== 'sending') return { next: null, queued: 0 };

  const tenant = { orgId: state.orgId, mode: state.mode };
  const { content, cursor } = state;
  const startedAt = state.startedAt!;
  const from = parseMailbox(content.from) as { address: string };
  const domainName = domainOf(from.address);
  const [domain, topic, template] = await Promise.all([
    findSendingDomain(services.db, tenant, domainName),
    content.topicId ? findTopic(services.db, tenant, content.topicId) : null,
    content.templateId ? findPublishedVersion(services.db, tenant, content.templateId) : null,
  ]);
  const page = await audienceRecipients(services.db, tenant, content.audienceId, {
    topicId: topic ? content.topicId : null,
    after: cursor,
    limit: services.config.BROADCAST_EXPANSION_BATCH,
  });
  const skipped = noneSkipped();
  const candidates = page.filter((r) => {
    const reason = skipReason(r, topic?.default_subscription ?? null);
    if (reason) skipped[reason]++;
    return !reason;
  });

  // The quota is asked once per step; a step done again gets the grant it had (`request`).
  let granted = candidates.length;
  if (candidates.length > 0) {
    try {
      granted = await consumeQuota(
        services,
        { ...tenant, plan: state.plan! },
        candidates.length,
        `${broadcastId} ${cursor}`,
      );
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'monthly_quota_exceeded') throw error;
      granted = 0;
    }
  }
  skipped.quota = candidates.length - granted;

  const render = renderer(broadcastId, content, template?.status === 'published' ? template.version : null);
  const tokens = services.tokens.unsubscribe;
  const base = services.config.PUBLIC_URL.replace(/\/$/, '');
  // The List-Unsubscribe mailto goes where the emails' bounces go: the MX takes it there.
  const returnPath = domain
    ? envelopeDomain(domain, services.config)
    : installationBounceDomain(services.config);
  const now = services.clock.now().toISOString();
  const queue = async (r: AudienceRecipient) => {
    const emailId = broadcastEmailId(broadcastId, r.id, startedAt);
    const token = tokens.sign(emailId);
    const unsubscribeUrl = `${base}/unsubscribe/${token}`;
    let body: ReturnType<Renderer>;
    try {
      body = render({
        contact: {
          email: r.email,
          first_name: r.first_name,
          last_name: r.last_name,
          properties: r.properties,
        },
        unsubscribe_url: unsubscribeUrl,
      });
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      services.log.warn(
        { broadcastId, contactId: r.id, reason: error.message },
        'broadcast email not rendered',
      );
      return false;
    }
    const name = [r.first_name, r.last_name].filter(Boolean).join(' ') || null;
    const email: EmailContent = {
      emailId,
      orgId: tenant.orgId,
      mode: tenant.mode,
      from: content.from,
      to: [formatMailbox({ name, address: r.email })],
      cc: [],
      bcc: [],
      replyTo: content.replyTo,
      subject: body.subject,
      ...withFooter(body, domain?.impressum ?? null, unsubscribeUrl),
      headers: {
        'List-Unsubscribe': `<${unsubscribeUrl}>, <mailto:${unsubscribeMailbox(token, returnPath)}>`,
        'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      },
      tags: [],
      attachments: [],
      domainId: domain?.id ?? null,
      domainName: domain?.name ?? domainName,
      ...(template?.status === 'published' && {
        templateId: template.version.templateId,
        templateVersionId: template.version.versionId,
      }),
      suppressedRecipients: [],
      createdAt: now,
      broadcast: { broadcastId, contactId: r.id, topicId: topic ? content.topicId : null },
    };
    await acceptPrepared(services, meta, { content: email, attachments: [] });
    return true;
  };
  // Rendering is CPU work: between slices of a step the event loop serves requests. The appends of the slices
  // are in flight together and share the store's group commits.
  const pending: Promise<boolean>[] = [];
  for (let i = 0; i < granted; i += SLICE) {
    for (const p of candidates.slice(i, Math.min(i + SLICE, granted)).map(queue)) {
      p.catch(() => {}); // awaited below: a failure while the loop waits is not an unhandled one
      pending.push(p);
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  const results = await Promise.all(pending);
  const queued = results.filter(Boolean).length;
  skipped.failed = results.length - queued;
  const last = page.length < services.config.BROADCAST_EXPANSION_BATCH;
  await decide({
    type: 'RecordBatch',
    after: cursor,
    cursor: page.at(-1)?.id ?? cursor,
    queued,
    skipped,
    last,
  });
  return { next: last ? null : services.clock.now(), queued };
}
