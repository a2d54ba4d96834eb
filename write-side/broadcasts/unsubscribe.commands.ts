import { type EmailBroadcastRef, type EmailContent, emailStream } from '../../domain/emails/email.events.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { unsubscribeContact } from '../contacts/contact.commands.ts';

export interface UnsubscribeTarget extends EmailBroadcastRef {
  meta: EventMetadata;
  emailId: string;
  from: string;
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
  return {
    ...content.broadcast,
    meta: { orgId: content.orgId, mode: content.mode, actor: 'system' },
    emailId,
    from: content.from,
  };
}

/**
 * Unsubscribes the contact an email was for: from the broadcast's topic when it had one, else from everything
 * (RFC 8058 one-click, or the List-Unsubscribe mailto). A contact deleted since is left as it is.
 */
export async function unsubscribeFrom(
  services: Parameters<typeof unsubscribeContact>[0],
  target: UnsubscribeTarget,
) {
  try {
    return await unsubscribeContact(services, target.meta, target.contactId, {
      topicId: target.topicId,
      broadcastId: target.broadcastId,
    });
  } catch (error) {
    if ((error as { code?: string }).code === 'not_found') return { position: undefined };
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
