import { parseMailbox } from '../../domain/emails/addresses.ts';
import { type EmailContent, emailStream } from '../../domain/emails/email.events.ts';
import { topicUnsubscribeAddress } from '../../domain/emails/list-unsubscribe.ts';
import type { EventMetadata, Position } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { unsubscribeAddress, unsubscribeContact } from '../contacts/contact.commands.ts';

export interface UnsubscribeTarget {
  meta: EventMetadata;
  emailId: string;
  from: string;
  /** The address the email was sent to (its first `to`), as it was then: the contact's may have changed since. */
  sentTo: string | null;
  /** The topic an unsubscribe leaves; null: everything. */
  topicId: string | null;
  /** The broadcast the email was of, which the unsubscribe counts for; null for a send about a topic. */
  broadcastId: string | null;
  /** The broadcast's contact; null for a send about a topic, whose address's contact is found when it is used. */
  contactId: string | null;
}

/**
 * The email an unsubscribe token names, with whom it was for: a broadcast's, or a send about a topic to one
 * address (domain/emails/list-unsubscribe.ts); null for a token that does not verify or names any other email.
 */
export async function unsubscribeTarget(
  services: Pick<Services, 'store' | 'tokens'>,
  token: string,
): Promise<UnsubscribeTarget | null> {
  const emailId = services.tokens.unsubscribe.verify(token);
  if (!emailId) return null;
  const [first] = await services.store.readStream(emailStream(emailId));
  if (first?.type !== 'EmailQueued' && first?.type !== 'EmailScheduled') return null;
  const content = first.data as EmailContent;
  const email = {
    meta: { orgId: content.orgId, mode: content.mode, actor: 'system' },
    emailId,
    from: content.from,
  };
  if (content.broadcast) {
    const to = content.to[0] ? parseMailbox(content.to[0]) : null;
    return { ...email, ...content.broadcast, sentTo: to && 'address' in to ? to.address : null };
  }
  const address = topicUnsubscribeAddress(content);
  if (!address || !content.topicId) return null;
  return { ...email, sentTo: address, topicId: content.topicId, broadcastId: null, contactId: null };
}

/** The contact an unsubscribe is for: the broadcast's, or the one that has the address now (null: none). */
export const targetContactId = (services: Pick<Services, 'db' | 'lookUps'>, target: UnsubscribeTarget) =>
  target.contactId ??
  (target.sentTo ? services.lookUps.contactIdOf(services.db, target.meta, target.sentTo) : null);

/** True for the `not_found` of a contact deleted (before or during a write): it gets nothing more anyway. */
export const contactGone = (error: unknown) => (error as { code?: string } | null)?.code === 'not_found';

/**
 * Unsubscribes whom an email was for: from its topic when it had one, else from everything (RFC 8058 one-click,
 * or the List-Unsubscribe mailto). A broadcast's contact deleted since is left as it is (`gone`); a send about a
 * topic unsubscribes its address (unsubscribeAddress).
 */
export async function unsubscribeFrom(
  services: Parameters<typeof unsubscribeContact>[0],
  target: UnsubscribeTarget,
): Promise<{ position?: Position; gone: boolean }> {
  const { meta, contactId, topicId, broadcastId, emailId, sentTo } = target;
  try {
    const { position } = contactId
      ? await unsubscribeContact(services, meta, contactId, { topicId, broadcastId, emailId })
      : await unsubscribeAddress(services, meta, sentTo!, { topicId, emailId });
    return { position, gone: false };
  } catch (error) {
    if (contactGone(error)) return { gone: true };
    throw error;
  }
}

/** Where unsubscribe links go (`PUBLIC_URL/unsubscribe/`, outside /v1): a link is this and its token. */
export const unsubscribeBase = (config: Services['config']) =>
  `${config.PUBLIC_URL.replace(/\/$/, '')}/unsubscribe/`;

const MAILTO_PREFIX = 'unsubscribe+';

/** The List-Unsubscribe `mailto:` address for an unsubscribe token, at the sending domain's return-path domain. */
export const unsubscribeMailbox = (token: string, returnPathDomain: string) =>
  `${MAILTO_PREFIX}${token}@${returnPathDomain.toLowerCase()}`;

/** The token of a List-Unsubscribe `mailto:` address, or null when the address is not one. Accepts `<...>`. */
export function unsubscribeTokenOf(address: string): string | null {
  const bare = address.trim().replace(/^<(.*)>$/, '$1');
  const at = bare.lastIndexOf('@');
  const local = bare.slice(0, Math.max(0, at)).toLowerCase();
  return local.startsWith(MAILTO_PREFIX) ? local.slice(MAILTO_PREFIX.length) : null;
}
