import { formatMailbox, type Mailbox } from '../../domain/emails/addresses.ts';
import { topicReaches } from '../../domain/topics/topic-reach.ts';
import type { AuthContext } from '../../platform/auth/auth-context.ts';
import { AppError, invalidField } from '../../platform/errors.ts';
import type { Services } from '../../platform/services.ts';
import type { EmailDraft } from './email-draft.ts';

type Deps = Pick<Services, 'caches' | 'db' | 'lookUps'>;

/** From memory for an organization with a short list (most have one), else one batched query per address. */
async function suppressed(services: Deps, auth: AuthContext, unique: string[]) {
  const { caches } = services;
  const small = await caches.suppressions.get(auth);
  const flags = small
    ? unique.map((a) => small.has(a))
    : await Promise.all(unique.map((a) => caches.suppressed.get(auth, a)));
  return new Set(unique.filter((_, i) => flags[i]));
}

/**
 * The addresses an email about the topic `topicId` does not reach (domain/topics/topic-reach.ts): the contacts
 * that opted out of it or out of everything, and, for a topic whose default is `opt_out`, every address that is
 * no contact or made no choice. A topic the organization does not have is refused.
 */
async function notReached(services: Deps, auth: AuthContext, topicId: string, unique: string[]) {
  const topic = await services.lookUps.findTopic(services.db, auth, topicId);
  if (!topic) throw invalidField('topic_id', `topic ${topicId} not found`);
  const readers = await services.lookUps.topicReaders(services.db, auth, topicId, unique);
  const byAddress = new Map(readers.map((r) => [r.email_lower, r]));
  return new Set(unique.filter((a) => !topicReaches(topic.default_subscription, byAddress.get(a) ?? null)));
}

/**
 * The recipients left once the sender's suppression list, and the topic the email is about if it names one, are
 * applied, formatted, and the addresses each removed; refused when none is left. A broadcast's audience query
 * applied both already.
 */
export async function deliverable(
  services: Deps,
  draft: Pick<EmailDraft, 'sender' | 'to' | 'cc' | 'bcc' | 'topicId'>,
) {
  const { to, cc, bcc, sender, topicId } = draft;
  const unique = [...new Set([...to, ...cc, ...bcc].map((m) => m.address.toLowerCase()))];
  const blocked = 'key' in sender ? await suppressed(services, sender.key, unique) : new Set<string>();
  const unsubscribed =
    'key' in sender && topicId ? await notReached(services, sender.key, topicId, unique) : new Set<string>();
  const keep = (list: Mailbox[]) =>
    list
      .filter((m) => !blocked.has(m.address.toLowerCase()) && !unsubscribed.has(m.address.toLowerCase()))
      .map(formatMailbox);
  const left = unique.filter((a) => blocked.has(a) || unsubscribed.has(a));
  const recipients = {
    to: keep(to),
    cc: keep(cc),
    bcc: keep(bcc),
    suppressedRecipients: left.filter((a) => blocked.has(a)),
    ...(topicId && { unsubscribedRecipients: left.filter((a) => !blocked.has(a)) }),
  };
  if (recipients.to.length + recipients.cc.length + recipients.bcc.length > 0) return recipients;
  const unsubscribedOnly = recipients.unsubscribedRecipients ?? [];
  if (unsubscribedOnly.length === 0)
    throw new AppError(
      'all_recipients_suppressed',
      `Every recipient is on the suppression list: ${[...blocked].join(', ')}.`,
    );
  throw new AppError(
    'all_recipients_unsubscribed',
    `No recipient receives emails about topic ${topicId}: ${unsubscribedOnly.join(', ')}` +
      (blocked.size > 0 ? `; on the suppression list: ${[...blocked].join(', ')}.` : '.'),
  );
}
