import {
  listUnsubscribeHeaders,
  namesListUnsubscribe,
  topicUnsubscribeAddress,
  withHeaderFields,
} from '../../domain/emails/list-unsubscribe.ts';
import type { Services } from '../../platform/services.ts';
import { unsubscribeBase, unsubscribeMailbox } from '../broadcasts/unsubscribe.commands.ts';
import type { EmailDraft } from './email-draft.ts';

/**
 * An email about a topic, sent to one address, carries Postline's one-click unsubscribe from the topic
 * (domain/emails/list-unsubscribe.ts) unless its sender wrote a List-Unsubscribe of its own: the headers it is
 * sent with, and a submitted message's bytes with the two fields added. The `mailto:` goes where its bounces go.
 */
export function withTopicUnsubscribe(
  services: Pick<Services, 'config' | 'tokens'>,
  draft: Pick<EmailDraft, 'emailId' | 'topicId' | 'headers' | 'raw'>,
  recipients: { to: string[]; cc: string[]; bcc: string[] },
  bounceDomain: string | null,
): Pick<EmailDraft, 'headers' | 'raw'> {
  const { headers, raw } = draft;
  // Most sends name no topic: the rule says so before any header is looked at.
  if (!bounceDomain || !topicUnsubscribeAddress({ topicId: draft.topicId, ...recipients }))
    return { headers, raw };
  if (raw ? raw.listUnsubscribe : namesListUnsubscribe(Object.keys(headers))) return { headers, raw };
  const token = services.tokens.unsubscribe.sign(draft.emailId);
  const added = listUnsubscribeHeaders(
    `${unsubscribeBase(services.config)}${token}`,
    unsubscribeMailbox(token, bounceDomain),
  );
  if (raw) return { headers, raw: { ...raw, bytes: withHeaderFields(raw.bytes, added) } };
  return { headers: { ...headers, ...added }, raw };
}
