import { createHmac } from 'node:crypto';
import {
  type ContactCommand,
  type ContactState,
  contactDecider,
  contactEmailDecider,
} from '../../domain/contacts/contact.decider.ts';
import { contactEmailStream, contactStream } from '../../domain/contacts/contact.events.ts';
import { keyObject } from '../../platform/crypto.ts';
import { AppError } from '../../platform/errors.ts';
import { handleCommand, rebuildState } from '../../platform/eventstore/command.ts';
import type { EventMetadata, StoredEvent } from '../../platform/eventstore/types.ts';
import { resolveSecretKey } from '../../platform/secret-key.ts';
import type { Services } from '../../platform/services.ts';

export type Deps = Pick<Services, 'store' | 'clock' | 'db' | 'config' | 'lookUps'>;

/** The address's claim key: a hash keyed by POSTLINE_SECRET_KEY, so no stream name or event holds the address. */
export const emailKeyOf = (services: Pick<Services, 'config'>, meta: EventMetadata, email: string) =>
  emailKeysOf(services, meta)(email);

/** `emailKeyOf` for many addresses: the secret is resolved once. */
export const emailKeysOf = (services: Pick<Services, 'config'>, meta: EventMetadata) => {
  const secret = keyObject(Buffer.from(resolveSecretKey(services.config), 'base64'));
  return (email: string) =>
    createHmac('sha256', secret)
      .update(`contact email\0${meta.orgId}\0${meta.mode}\0${email.trim().toLowerCase()}`)
      .digest('hex');
};

export const at = (services: Pick<Services, 'clock'>) => services.clock.now().toISOString();

export async function readContact(services: Deps, contactId: string): Promise<ContactState> {
  return rebuildState(contactDecider, await services.store.readStream(contactStream(contactId)));
}

/**
 * Claims the address for the contact. The holder's contact is read for the decider: one deleted does not keep
 * it, nor one never written long after its claim (a crash between the claim and the contact); one never written
 * and claimed lately is being created, and keeps it (contactEmailDecider).
 */
export async function claimEmail(
  services: Deps,
  meta: EventMetadata,
  emailKey: string,
  contactId: string,
  options: { likelyFree?: boolean; retries?: number } = {},
) {
  await handleCommand(
    services.store,
    contactEmailStream(emailKey),
    contactEmailDecider,
    async (state) => ({
      type: 'ClaimContactEmail' as const,
      contactId,
      holderSeen: await holderSeen(services, state.holder, contactId),
      at: at(services),
    }),
    meta,
    // An address never claimed needs no read first: the append expects no stream, and a claim there is read then.
    { ...(options.likelyFree && { history: [] }), retries: options.retries },
  );
}

/** What the address rule needs of the holder's contact: null when it lives or is the claimant itself. */
async function holderSeen(services: Deps, holder: string | null, contactId: string) {
  if (!holder || holder === contactId) return null;
  const contact = await readContact(services, holder);
  if (!contact.exists) return { contactId: holder, as: 'unwritten' as const };
  return contact.deleted ? { contactId: holder, as: 'deleted' as const } : null;
}

/** The refusal of a claim whose address another contact has (contactEmailDecider). */
export const isAddressTaken = (error: unknown) =>
  error instanceof AppError && error.code === 'contact_exists';

export const releaseEmail = (services: Deps, meta: EventMetadata, emailKey: string, contactId: string) =>
  handleCommand(
    services.store,
    contactEmailStream(emailKey),
    contactEmailDecider,
    { type: 'ReleaseContactEmail', contactId, at: at(services) },
    meta,
  );

type Fields<T extends ContactCommand['type']> = Omit<
  Extract<ContactCommand, { type: T }>,
  'type' | 'contactId' | 'orgId' | 'mode' | 'at'
>;

/** Decides a command on the contact's stream, as the caller's organization and mode, stamped with the clock. */
export const onContact = <T extends ContactCommand['type']>(
  services: Deps,
  meta: EventMetadata,
  type: T,
  contactId: string,
  fields: Fields<T>,
  options?: { history?: StoredEvent[]; retries?: number },
) =>
  handleCommand(
    services.store,
    contactStream(contactId),
    contactDecider,
    { type, contactId, orgId: meta.orgId, mode: meta.mode, ...fields, at: at(services) } as ContactCommand,
    meta,
    options,
  );
