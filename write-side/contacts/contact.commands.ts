import type { ContactState } from '../../domain/contacts/contact.decider.ts';
import type { ContactPersonalData } from '../../domain/contacts/contact.events.ts';
import { AppError, notFound } from '../../platform/errors.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
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

/** Changes what `patch` names; a new address is claimed first, and the old one released after. */
export async function updateContact(
  services: Deps,
  meta: EventMetadata,
  contactId: string,
  patch: Partial<ContactInput>,
) {
  const state = await readContact(services, contactId);
  if (!state.exists || state.deleted || state.orgId !== meta.orgId || state.mode !== meta.mode)
    throw notFound('Contact', contactId);
  const current = await openPersonalData<ContactPersonalData>(services.db, contactId, state.personal);
  if (!current) throw notFound('Contact', contactId);
  const next = patched(state, current, patch);
  // Nothing changes: nothing is appended (and no webhook fires).
  if (!next) return { position: undefined };
  const emailKey = emailKeyOf(services, meta, next.personal.email);
  if (emailKey !== state.emailKey) await claimEmail(services, meta, emailKey, contactId);
  // Deleted since it was read (its data forgotten): not found, and no key is made for it again.
  const personal = await sealPersonalData(services.db, contactId, next.personal).catch((error) => {
    throw error instanceof PersonalDataForgottenError ? notFound('Contact', contactId) : error;
  });
  const fields = { emailKey, personal, unsubscribed: next.unsubscribed, consentGivenAt: next.consentGivenAt };
  const result = await onContact(services, meta, 'UpdateContact', contactId, fields);
  if (emailKey !== state.emailKey) await releaseEmail(services, meta, state.emailKey, contactId);
  return { position: result.position };
}

/** The contact once `patch` applies; null when nothing would change. */
function patched(
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

/** Deletes the contact, frees its address and forgets its personal data (the events keep it sealed, unreadable). */
export async function deleteContact(services: Deps, meta: EventMetadata, contactId: string) {
  const result = await onContact(services, meta, 'DeleteContact', contactId, {});
  if (result.state.exists) await releaseEmail(services, meta, result.state.emailKey, contactId);
  await forgetPersonalData(services.db, contactId);
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

/** Sets the contact's choices for topics of its organization and mode; an unknown topic is refused. */
export async function setContactTopics(
  services: Deps,
  meta: EventMetadata,
  contactId: string,
  subscriptions: { topicId: string; subscription: 'opt_in' | 'opt_out' }[],
) {
  const defaults: Record<string, 'opt_in' | 'opt_out'> = {};
  for (const { topicId } of subscriptions) {
    const topic = await services.lookUps.findTopic(services.db, meta, topicId);
    if (!topic) throw new AppError('validation_error', `\`topic_id\`: topic ${topicId} not found`);
    defaults[topicId] = topic.default_subscription;
  }
  const result = await onContact(services, meta, 'SetContactTopics', contactId, { subscriptions, defaults });
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
  from: { topicId: string | null; broadcastId: string | null },
) {
  const topic = from.topicId ? await services.lookUps.findTopic(services.db, meta, from.topicId) : null;
  const result = await onContact(services, meta, 'UnsubscribeContact', contactId, {
    // A topic deleted since: the contact leaves everything rather than nothing.
    topicId: topic ? from.topicId : null,
    topicDefault: topic?.default_subscription ?? null,
    broadcastId: from.broadcastId,
  });
  return { position: result.position };
}
