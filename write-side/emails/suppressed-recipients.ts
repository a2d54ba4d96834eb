import { formatMailbox, type Mailbox } from '../../domain/emails/addresses.ts';
import type { AuthContext } from '../../platform/auth/auth-context.ts';
import { AppError } from '../../platform/errors.ts';
import type { Services } from '../../platform/services.ts';
import type { EmailDraft } from './email-draft.ts';

type Deps = Pick<Services, 'caches'>;

/** From memory for an organization with a short list (most have one), else one batched query per address. */
async function suppressed(services: Deps, auth: AuthContext, list: Mailbox[]) {
  const unique = [...new Set(list.map((m) => m.address.toLowerCase()))];
  const { caches } = services;
  const small = await caches.suppressions.get(auth);
  const flags = small
    ? unique.map((a) => small.has(a))
    : await Promise.all(unique.map((a) => caches.suppressed.get(auth, a)));
  return new Set(unique.filter((_, i) => flags[i]));
}

/**
 * The recipients left once the sender's suppression list is applied, formatted, and the addresses it removed;
 * refused when none is left. A broadcast's audience query left its suppressed contacts out already.
 */
export async function deliverable(services: Deps, draft: Pick<EmailDraft, 'sender' | 'to' | 'cc' | 'bcc'>) {
  const { to, cc, bcc, sender } = draft;
  const blocked =
    'key' in sender ? await suppressed(services, sender.key, [...to, ...cc, ...bcc]) : new Set<string>();
  const keep = (list: Mailbox[]) =>
    list.filter((m) => !blocked.has(m.address.toLowerCase())).map(formatMailbox);
  const recipients = { to: keep(to), cc: keep(cc), bcc: keep(bcc), suppressedRecipients: [...blocked] };
  if (recipients.to.length + recipients.cc.length + recipients.bcc.length === 0) {
    throw new AppError(
      'all_recipients_suppressed',
      `Every recipient is on the suppression list: ${[...blocked].join(', ')}.`,
    );
  }
  return recipients;
}
