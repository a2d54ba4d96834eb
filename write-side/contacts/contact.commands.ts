import { createHmac } from 'node:crypto';
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
import { keyObject } from '../../platform/crypto.ts';
import { AppError, notFound } from '../../platform/errors.ts';
import { handleCommand, rebuildState } from '../../platform/eventstore/command.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import {
  forgetPersonalData,
  openPersonalData,
  sealPersonalData,
  sealPersonalDataMany,
} from '../../platform/personal-data.ts';
import type { Services } from '../../platform/services.ts';
import { findAudience } from '../../read-side/audiences/audiences.queries.ts';
import { findTopic } from '../../read-side/topics/topics.queries.ts';

type Deps = Pick<Services, 'store' | 'clock' | 'db' | 'secretKey'>;

/** The address's claim key: a hash keyed by POSTLINE_SECRET_KEY, so no stream name or event holds the address. */
const emailKeyOf = (services: Pick<Services, 'secretKey'>, meta: EventMetadata, email: string) =>
  emailKeysOf(services, meta)(email);

/** `emailKeyOf` for many addresses: the secret is resolved once. */
const emailKeysOf = (services: Pick<Services, 'secretKey'>, meta: EventMetadata) => {
  const secret = keyObject(Buffer.from(services.secretKey, 'base64'));
  return (email: string) =>
    createHmac('sha256', secret)
      .update(`contact email\0${meta.orgId}\0${meta.mode}\0${email.trim().toLowerCase()}`)
      .digest('hex');
};

const at = (services: Pick<Services, 'clock'>) => services.clock.now().toISOString();

async function readContact(services: Deps, contactId: string): Promise<ContactState> {
  return rebuildState(contactDecider, await services.store.readStream(contactStream(contactId)));
}

/**
 * Claims the address for the contact. A holder whose contact stream was never written (a crash between the claim
 * and the contact) or was deleted does not keep it.
 */
async function claimEmail(
  services: Deps,
  meta: EventMetadata,
  emailKey: string,
  contactId: string,
  options: { likelyFree?: boolean } = {},
) {
  await handleCommand(
    services.store,
    contactEmailStream(emailKey),
    contactEmailDecider,
    async (state) => {
      const holder =
        state.holder && state.holder !== contactId ? await readContact(services, state.holder) : null;
      const abandoned = holder && (!holder.exists || holder.deleted) ? state.holder : null;
      return { type: 'ClaimContactEmail' as const, contactId, abandoned, at: at(services) };
    },
    meta,
    // An address never claimed needs no read first: the append expects no stream, and a claim there is read then.
    options.likelyFree ? { history: [] } : {},
  );
}

const releaseEmail = (services: Deps, meta: EventMetadata, emailKey: string, contactId: string) =>
  handleCommand(
    services.store,
    contactEmailStream(emailKey),
    contactEmailDecider,
    { type: 'ReleaseContactEmail', contactId, at: at(services) },
    meta,
  );

async function requireAudiences(services: Deps, meta: EventMetadata, audienceIds: string[]) {
  for (const id of audienceIds) {
    if (!(await findAudience(services.db, meta, id)))
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
  if (!(await findAudience(services.db, meta, audienceId))) throw notFound('Audience', audienceId);
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
    const topic = await findTopic(services.db, meta, topicId);
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
  const topic = from.topicId ? await findTopic(services.db, meta, from.topicId) : null;
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

/** A contact of an import: its id is the import's for that row, so a resumed run writes the same contact again. */
export interface ImportedContact {
  contactId: string;
  line: number;
  email: string;
  /** Undefined: the row gave none (an existing contact keeps its own). */
  firstName?: string;
  lastName?: string;
  properties: Record<string, string>;
}

export interface ImportedBatch {
  created: number;
  updated: number;
  skipped: { line: number; reason: string }[];
}

/**
 * Writes a batch of imported rows (distinct addresses) under the address rule. A row whose address is free gets
 * a new contact in `audienceId`; one whose address belongs to a contact updates it: the names the row gives, its
 * properties merged by name (at most `maxProperties`), and it joins the audience. The appends of the whole batch
 * are in flight together and share statements (the store's group commit); streams are not read first unless
 * `mayExist`. A row written already by an earlier run of the same import is found as its own and counted as
 * created again.
 */
export async function importContacts(
  services: Deps,
  meta: EventMetadata,
  rows: ImportedContact[],
  o: {
    audienceId: string | null;
    maxProperties: number;
    /** The batch may have been written before (a run resumed after a crash): each stream is read first. */
    mayExist?: boolean;
  },
): Promise<ImportedBatch> {
  const unwritten = !o.mayExist;
  const now = at(services);
  const keyOf = emailKeysOf(services, meta);
  const claims = await Promise.all(
    rows.map(async (row) => {
      const emailKey = keyOf(row.email);
      // A holder that released the address between the refusal and the read: claimed again, once.
      for (let attempt = 0; ; attempt++) {
        try {
          await claimEmail(services, meta, emailKey, row.contactId, {
            likelyFree: unwritten && attempt === 0,
          });
          return { row, emailKey, holder: null };
        } catch (error) {
          if (!(error instanceof AppError && error.code === 'contact_exists')) throw error;
          const claim = await services.store.readStream(contactEmailStream(emailKey));
          const { holder } = rebuildState(contactEmailDecider, claim);
          if (holder !== null || attempt > 0) return { row, emailKey, holder: holder ?? row.contactId };
        }
      }
    }),
  );
  const fresh = claims.filter((c) => c.holder === null);
  const sealed = await sealPersonalDataMany(
    services.db,
    fresh.map(({ row }) => ({
      subject: row.contactId,
      value: {
        email: row.email,
        firstName: row.firstName ?? null,
        lastName: row.lastName ?? null,
        properties: row.properties,
      } satisfies ContactPersonalData,
    })),
  );
  await Promise.all(
    fresh.map(({ row, emailKey }, i) =>
      handleCommand(
        services.store,
        contactStream(row.contactId),
        contactDecider,
        {
          type: 'CreateContact',
          contactId: row.contactId,
          orgId: meta.orgId,
          mode: meta.mode,
          emailKey,
          personal: sealed[i],
          unsubscribed: false,
          consentGivenAt: null,
          audienceIds: o.audienceId ? [o.audienceId] : [],
          at: now,
        },
        meta,
        // A new contact's stream needs no read: the append expects none (a conflict reads it then).
        unwritten ? { history: [] } : {},
      ),
    ),
  );
  const skipped: ImportedBatch['skipped'] = [];
  let updated = 0;
  await Promise.all(
    claims
      .filter((c) => c.holder !== null)
      .map(async ({ row, holder }) => {
        const reason = await mergeImported(services, meta, holder!, row, o);
        if (reason) skipped.push({ line: row.line, reason });
        else updated++;
      }),
  );
  return { created: fresh.length, updated, skipped: skipped.sort((a, b) => a.line - b.line) };
}

/** An imported row into the contact that has its address; why not, when it cannot be. */
async function mergeImported(
  services: Deps,
  meta: EventMetadata,
  contactId: string,
  row: ImportedContact,
  o: { audienceId: string | null; maxProperties: number },
): Promise<string | null> {
  const state = await readContact(services, contactId);
  const current =
    state.exists && !state.deleted
      ? await openPersonalData<ContactPersonalData>(services.db, contactId, state.personal)
      : null;
  if (!current) return 'email: its contact was being deleted; import the row again';
  const properties = { ...current.properties, ...row.properties };
  if (Object.keys(properties).length > o.maxProperties)
    return `properties: the existing contact would have more than ${o.maxProperties}`;
  await updateContact(services, meta, contactId, {
    firstName: row.firstName,
    lastName: row.lastName,
    properties,
  });
  if (o.audienceId)
    await handleCommand(
      services.store,
      contactStream(contactId),
      contactDecider,
      {
        type: 'AddContactToAudience',
        contactId,
        orgId: meta.orgId,
        mode: meta.mode,
        audienceId: o.audienceId,
        at: at(services),
      },
      meta,
    );
  return null;
}
