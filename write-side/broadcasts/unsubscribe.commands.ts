import { parseMailbox } from '../../domain/emails/addresses.ts';
import { type EmailBroadcastRef, type EmailContent, emailStream } from '../../domain/emails/email.events.ts';
import type { EventMetadata, Position } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { unsubscribeContact } from '../contacts/contact.commands.ts';

export interface UnsubscribeTarget extends EmailBroadcastRef {
  meta: EventMetadata;
  emailId: string;
  from: string;
  /** The address the email was sent to (its first `to`), as it was then: the contact's may have changed since. */
  sentTo: string | null;
}

/**
 * The broadcast email an unsubscribe token names, with whom it was for; null for a token that does not verify or
 * names any other email.
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
  if (!content.broadcast) return null;
  const to = content.to[0] ? parseMailbox(content.to[0]) : null;
  return {
    ...content.broadcast,
    meta: { orgId: content.orgId, mode: content.mode, actor: 'system' },
    emailId,
    from: content.from,
    sentTo: to && 'address' in to ? to.address : null,
  };
}

/** True for the `not_found` of a contact deleted (before or during a write): it gets nothing more anyway. */
export const contactGone = (error: unknown) => (error as { code?: string } | null)?.code === 'not_found';

/**
 * Unsubscribes the contact an email was for: from the broadcast's topic when it had one, else from everything
 * (RFC 8058 one-click, or the List-Unsubscribe mailto). A contact deleted since is left as it is (`gone`).
 */
export async function unsubscribeFrom(
  services: Parameters<typeof unsubscribeContact>[0],
  target: UnsubscribeTarget,
): Promise<{ position?: Position; gone: boolean }> {
  try {
    const { position } = await unsubscribeContact(services, target.meta, target.contactId, {
      topicId: target.topicId,
      broadcastId: target.broadcastId,
    });
    return { position, gone: false };
  } catch (error) {
    if (contactGone(error)) return { gone: true };
    throw error;
  }
}

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
