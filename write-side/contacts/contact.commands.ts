import { contactDecider } from '../../domain/contacts/contact.decider.ts';
import { type ContactPersonalData, contactStream } from '../../domain/contacts/contact.events.ts';
import { AppError, notFound } from '../../platform/errors.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import { forgetPersonalData, openPersonalData, sealPersonalData } from '../../platform/personal-data.ts';
import { at, claimEmail, type Deps, emailKeyOf, readContact, releaseEmail } from './contact-email.ts';

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

export async function createContact(
  services: Deps,
  meta: EventMetadata,
  input: ContactInput & { audienceIds: string[] },
) {
  await requireAudiences(services, meta, input.audienceIds);
  const contactId = newId('con', services.clock.now().getTime());
  const emailKey = emailKeyOf(services, meta, input.email);
  await claimEmail(services, meta, emailKey, contactId);
  const { email, firstName, lastName, properties } = input;
  const result = await handleCommand(
    services.store,
    contactStream(contactId),
    contactDecider,
    {
      type: 'CreateContact',
      contactId,
      orgId: meta.orgId,
      mode: meta.mode,
      emailKey,
      personal: await sealPersonalData(services.db, contactId, { email, firstName, lastName, properties }),
      unsubscribed: input.unsubscribed,
      consentGivenAt: input.consentGivenAt,
      audienceIds: [...new Set(input.audienceIds)],
      at: at(services),
    },
    meta,
    { history: [] },
  );
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
  const next: ContactPersonalData = {
    email: patch.email ?? current.email,
    firstName: patch.firstName === undefined ? current.firstName : patch.firstName,
    lastName: patch.lastName === undefined ? current.lastName : patch.lastName,
    properties: patch.properties ?? current.properties,
  };
  const unsubscribed = patch.unsubscribed ?? state.unsubscribed;
  const consentGivenAt = patch.consentGivenAt === undefined ? state.consentGivenAt : patch.consentGivenAt;
  // Nothing changes: nothing is appended (and no webhook fires).
  if (
    JSON.stringify(next) === JSON.stringify(current) &&
    unsubscribed === state.unsubscribed &&
    consentGivenAt === state.consentGivenAt
  )
    return { position: undefined };
  const emailKey = emailKeyOf(services, meta, next.email);
  if (emailKey !== state.emailKey) await claimEmail(services, meta, emailKey, contactId);
  const result = await handleCommand(
    services.store,
    contactStream(contactId),
    contactDecider,
    {
      type: 'UpdateContact',
      contactId,
      orgId: meta.orgId,
      mode: meta.mode,
      emailKey,
      personal: await sealPersonalData(services.db, contactId, next),
      unsubscribed,
      consentGivenAt,
      at: at(services),
    },
    meta,
  );
  if (emailKey !== state.emailKey) await releaseEmail(services, meta, state.emailKey, contactId);
  return { position: result.position };
}

/** Deletes the contact, frees its address and forgets its personal data (the events keep it sealed, unreadable). */
export async function deleteContact(services: Deps, meta: EventMetadata, contactId: string) {
  const caller = { contactId, orgId: meta.orgId, mode: meta.mode, at: at(services) };
  const result = await handleCommand(
    services.store,
    contactStream(contactId),
    contactDecider,
    { ...caller, type: 'DeleteContact' },
    meta,
  );
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
  const result = await handleCommand(
    services.store,
    contactStream(contactId),
    contactDecider,
    {
      type: member ? 'AddContactToAudience' : 'RemoveContactFromAudience',
      contactId,
      orgId: meta.orgId,
      mode: meta.mode,
      audienceId,
      at: at(services),
    },
    meta,
  );
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
  const result = await handleCommand(
    services.store,
    contactStream(contactId),
    contactDecider,
    {
      type: 'SetContactTopics',
      contactId,
      orgId: meta.orgId,
      mode: meta.mode,
      subscriptions,
      defaults,
      at: at(services),
    },
    meta,
  );
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
  const result = await handleCommand(
    services.store,
    contactStream(contactId),
    contactDecider,
    {
      type: 'UnsubscribeContact',
      contactId,
      orgId: meta.orgId,
      mode: meta.mode,
      // A topic deleted since: the contact leaves everything rather than nothing.
      topicId: topic ? from.topicId : null,
      topicDefault: topic?.default_subscription ?? null,
      broadcastId: from.broadcastId,
      at: at(services),
    },
    meta,
  );
  return { position: result.position };
}
