import type { EventMetadata } from '../../platform/eventstore/types.ts';
import type { Services } from '../../platform/services.ts';
import { unsubscribeContact } from '../contacts/contact.commands.ts';
import { type EmailBroadcastRef, type EmailContent, emailStream } from '../emails/email.events.ts';

export interface UnsubscribeTarget extends EmailBroadcastRef {
  meta: EventMetadata;
  emailId: string;
  from: string;
}

/** The broadcast email an unsubscribe token names, with whom it was for; null for any other email. */
export async function unsubscribeTarget(
  services: Pick<Services, 'store'>,
  emailId: string,
): Promise<UnsubscribeTarget | null> {
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
