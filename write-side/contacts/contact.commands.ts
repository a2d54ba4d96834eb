import {
  type ContactState,
  contactDecider,
  contactEmailDecider,
} from '../../domain/contacts/contact.decider.ts';
import {
  type ContactPersonalData,
  contactEmailStream,
  contactStream,
} from '../../domain/contacts/contact.events.ts';
import { AppError, notFound, visibleTo } from '../../platform/errors.ts';
import { rebuildState } from '../../platform/eventstore/command.ts';
import { type EventMetadata, WrongExpectedRevisionError } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import {
  forgetPersonalData,
  openPersonalData,
  PersonalDataForgottenError,
  sealPersonalData,
} from '../../platform/personal-data.ts';
import {
  claimEmail,
  type Deps,
  emailKeyOf,
  isAddressTaken,
  onContact,
  readContact,
  releaseEmail,
} from './contact-streams.ts';

async function requireAudiences(services: Deps, meta: EventMetadata, audienceIds: string[]) {
  for (const id of audienceIds) {
    if (!(await services.lookUps.findAudience(services.db, meta, id)))
      throw new AppError('validation_error', `\`audience_ids\`: audience ${id} not found`);
  }
}

export interface ContactInput extends ContactPersonalData {
  unsubscribed: boolean;
  consentGivenAt: string | null;
}

/** A new contact: its audiences must exist, its address be free (claimed first). */
export async function createContact(
  services: Deps,
  meta: EventMetadata,
  input: ContactInput & { audienceIds: string[] },
) {
  await requireAudiences(services, meta, input.audienceIds);
  const contactId = newId('con', services.clock.now().getTime());
  const emailKey = emailKeyOf(services, meta, input.email);
  await claimEmail(services, meta, emailKey, contactId);
  const { email, firstName, lastName, properties, unsubscribed, consentGivenAt } = input;
  const personal = await sealPersonalData(services.db, contactId, { email, firstName, lastName, properties });
  const audienceIds = [...new Set(input.audienceIds)];
  const fields = { emailKey, personal, unsubscribed, consentGivenAt, audienceIds };
  const result = await onContact(services, meta, 'CreateContact', contactId, fields, { history: [] });
  return { contactId, position: result.position };
}

/** How often a change is decided again on a contact that changed meanwhile, before it gives up (409). */
const UPDATE_ATTEMPTS = 5;

/**
 * Changes what `patch` names (or what it gives for the contact's personal data as it is now); a new address is
 * claimed first, and the old one released after. The change is appended only if the contact is still as it was
 * read: otherwise it is worked out again on the contact as it is now, so that a change or an unsubscribe that
 * came in between is kept rather than overwritten with what was read before it.
 */
export async function updateContact(
  services: Deps,
  meta: EventMetadata,
  contactId: string,
  patch: Partial<ContactInput> | ((current: ContactPersonalData) => Partial<ContactInput>),
) {
  // A new address claimed for a change not made (yet): it goes back unless the contact has it by then.
  let claimed: string | undefined;
  const unclaim = async () => {
    if (claimed) await releaseUnheld(services, meta, claimed, contactId);
    claimed = undefined;
  };
  for (let attempt = 1; ; attempt++) {
    try {
      const history = await services.store.readStream(contactStream(contactId));
      const state = visibleTo(rebuildState(contactDecider, history), meta, 'Contact', contactId);
      const current = await openPersonalData<ContactPersonalData>(services.db, contactId, state.personal);
      if (!current) throw notFound('Contact', contactId);
      const next = patched(state, current, typeof patch === 'function' ? patch(current) : patch);
      const emailKey = next && emailKeyOf(services, meta, next.personal.email);
      if (claimed !== emailKey) await unclaim();
      // Nothing changes: nothing is appended (and no webhook fires).
      if (!next || !emailKey) return { position: undefined };
      if (emailKey !== state.emailKey && !claimed) {
        await claimEmail(services, meta, emailKey, contactId);
        claimed = emailKey;
      }
      // Deleted since it was read (its data forgotten): not found, and no key is made for it again.
      const personal = await sealPersonalData(services.db, contactId, next.personal).catch((error) => {
        throw error instanceof PersonalDataForgottenError ? notFound('Contact', contactId) : error;
      });
      const { unsubscribed, consentGivenAt } = next;
      const fields = { emailKey, personal, unsubscribed, consentGivenAt };
      const result = await onContact(services, meta, 'UpdateContact', contactId, fields, {
        history,
        retries: 0,
      });
      claimed = undefined;
      if (emailKey !== state.emailKey) await releaseEmail(services, meta, state.emailKey, contactId);
      return { position: result.position };
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError && attempt < UPDATE_ATTEMPTS) continue;
      await unclaim();
      if (error instanceof WrongExpectedRevisionError)
        throw new AppError('concurrent_modification', 'The contact kept changing meanwhile; try again.');
      throw error;
    }
  }
}

/** Releases the contact's claim of `emailKey` unless the contact, as it is now, has that address. */
async function releaseUnheld(services: Deps, meta: EventMetadata, emailKey: string, contactId: string) {
  const now = await readContact(services, contactId);
  if (now.exists && !now.deleted && now.emailKey === emailKey) return;
  await releaseEmail(services, meta, emailKey, contactId);
}

/** The contact once `patch` applies; null when nothing would change. */
export function patched(
  state: Extract<ContactState, { exists: true }>,
  current: ContactPersonalData,
  patch: Partial<ContactInput>,
) {
  const personal: ContactPersonalData = {
    email: patch.email ?? current.email,
    firstName: patch.firstName === undefined ? current.firstName : patch.firstName,
    lastName: patch.lastName === undefined ? current.lastName : patch.lastName,
    properties: patch.properties ?? current.properties,
  };
  const unsubscribed = patch.unsubscribed ?? state.unsubscribed;
  const consentGivenAt = patch.consentGivenAt === undefined ? state.consentGivenAt : patch.consentGivenAt;
  const same =
    JSON.stringify(personal) === JSON.stringify(current) &&
    unsubscribed === state.unsubscribed &&
    consentGivenAt === state.consentGivenAt;
  return same ? null : { personal, unsubscribed, consentGivenAt };
}

/**
 * Deletes the contact, forgets its personal data (the events keep it sealed, unreadable) and frees its address.
 * The data is forgotten first: a delete that stops part way has erased it, or has left the contact there to be
 * deleted again; never a deleted contact (a second DELETE is a 404) whose data can still be read. An address left
 * claimed is freed all the same: a deleted contact does not keep it.
 */
export async function deleteContact(services: Deps, meta: EventMetadata, contactId: string) {
  visibleTo(await readContact(services, contactId), meta, 'Contact', contactId);
  await forgetPersonalData(services.db, contactId);
  const result = await onContact(services, meta, 'DeleteContact', contactId, {});
  if (result.state.exists) await releaseEmail(services, meta, result.state.emailKey, contactId);
  return { position: result.position };
}

export async function changeMembership(
  services: Deps,
  meta: EventMetadata,
  contactId: string,
  audienceId: string,
  member: boolean,
) {
  if (!(await services.lookUps.findAudience(services.db, meta, audienceId)))
    throw notFound('Audience', audienceId);
  const type = member ? 'AddContactToAudience' : 'RemoveContactFromAudience';
  const result = await onContact(services, meta, type, contactId, { audienceId });
  return { position: result.position };
}

/** The email whose unsubscribe link (or page, or mailto) a change came by, and its broadcast; null for the API. */
export interface UnsubscribedBy {
  emailId: string | null;
  broadcastId: string | null;
}
const BY_THE_API: UnsubscribedBy = { emailId: null, broadcastId: null };

/**
 * Sets the contact's choices for topics of its organization and mode; an unknown topic is refused. `from`: the
 * email whose unsubscribe page they were made on, which each topic left is then counted for (and its broadcast).
 */
export async function setContactTopics(
  services: Deps,
  meta: EventMetadata,
  contactId: string,
  subscriptions: { topicId: string; subscription: 'opt_in' | 'opt_out' }[],
  from: UnsubscribedBy = BY_THE_API,
) {
  const defaults: Record<string, 'opt_in' | 'opt_out'> = {};
  for (const { topicId } of subscriptions) {
    const topic = await services.lookUps.findTopic(services.db, meta, topicId);
    if (!topic) throw new AppError('validation_error', `\`topic_id\`: topic ${topicId} not found`);
    defaults[topicId] = topic.default_subscription;
  }
  const result = await onContact(services, meta, 'SetContactTopics', contactId, {
    subscriptions,
    defaults,
    ...from,
  });
  return { position: result.position };
}

/**
 * An unsubscribe link followed (RFC 8058): from the topic, when the broadcast had one, else from everything. A
 * contact unsubscribed already, or deleted meanwhile, changes nothing.
 */
export async function unsubscribeContact(
  services: Deps,
  meta: EventMetadata,
  contactId: string,
  from: UnsubscribedBy & { topicId: string | null },
) {
  const topic = from.topicId ? await services.lookUps.findTopic(services.db, meta, from.topicId) : null;
  const result = await onContact(services, meta, 'UnsubscribeContact', contactId, {
    // A topic deleted since: the contact leaves everything rather than nothing.
    topicId: topic ? from.topicId : null,
    topicDefault: topic?.default_subscription ?? null,
    broadcastId: from.broadcastId,
    emailId: from.emailId,
  });
  return { position: result.position };
}

/**
 * An unsubscribe link of a send about a topic, which names an address rather than a contact: the contact that has
 * the address leaves the topic (or everything, unsubscribeContact); an address that is no contact becomes one,
 * out of the topic, so that the next email about it leaves the address out where the topic's default reached it.
 */
export async function unsubscribeAddress(
  services: Deps,
  meta: EventMetadata,
  email: string,
  from: { topicId: string | null; emailId: string },
) {
  const by = { ...from, broadcastId: null };
  for (let attempt = 1; ; attempt++) {
    const holder = await liveHolder(services, meta, email);
    if (holder) return unsubscribeContact(services, meta, holder, by);
    const created = await createContact(services, meta, {
      email,
      firstName: null,
      lastName: null,
      properties: {},
      unsubscribed: false,
      consentGivenAt: null,
      audienceIds: [],
    }).catch((error) => {
      // Made a contact meanwhile, by someone else: that one leaves the topic.
      if (isAddressTaken(error) && attempt < 3) return null;
      throw error;
    });
    if (created) return unsubscribeContact(services, meta, created.contactId, by);
  }
}

/** The contact that has the address, as its claim says, unless it is deleted or was never written. */
async function liveHolder(services: Deps, meta: EventMetadata, email: string) {
  const key = emailKeyOf(services, meta, email);
  const { holder } = rebuildState(
    contactEmailDecider,
    await services.store.readStream(contactEmailStream(key)),
  );
  if (!holder) return null;
  const contact = await readContact(services, holder);
  return contact.exists && !contact.deleted ? holder : null;
}
