import { type ContactCommand, contactDecider } from '../../domain/contacts/contact.decider.ts';
import { type ContactPersonalData, contactStream } from '../../domain/contacts/contact.events.ts';
import { AppError, isVisibleTo } from '../../platform/errors.ts';
import { handleCommand, inSequence, rebuildState } from '../../platform/eventstore/command.ts';
import {
  type EventMetadata,
  type StoredEvent,
  WrongExpectedRevisionError,
} from '../../platform/eventstore/types.ts';
import { mapLimited } from '../../platform/map-limited.ts';
import { openPersonalDataMany, sealPersonalDataMany } from '../../platform/personal-data.ts';
import { patched, updateContact } from '../../write-side/contacts/contact.commands.ts';
import { at, type Deps, emailKeysOf } from '../../write-side/contacts/contact-streams.ts';
import type { ImportedContact } from './contact-import-cursor.ts';

export interface MergeOptions {
  audienceId: string | null;
  maxProperties: number;
}

/** A row to merge into `contactId`, the contact that holds its address; its stream when it was read already. */
export interface Merge {
  contactId: string;
  row: ImportedContact;
  history?: StoredEvent[];
}

/** Rows merged one by one (a contact that changed meanwhile, or is not there), a few at a time. */
const ALONE_AT_ONCE = 8;

const BUSY = 'email: its contact was being created or deleted; import the row again';
const tooMany = (o: MergeOptions) =>
  `properties: the existing contact would have more than ${o.maxProperties}`;

/** The contact's properties with the row's merged in by name; null past `maxProperties`. */
function mergedProperties(current: ContactPersonalData, row: ImportedContact, o: MergeOptions) {
  const properties = { ...current.properties, ...row.properties };
  return Object.keys(properties).length > o.maxProperties ? null : properties;
}

/**
 * Imported rows into the contacts that have their addresses: the names each row gives, its properties merged by
 * name (at most `maxProperties`), and the audience. All at once: the contacts' streams are read together, their
 * personal data opened and sealed again in one statement each, and each contact's change (its update and its
 * membership) is one append, the appends in flight together. A contact that changed between its read and its
 * append, or that is not there as read, has its row merged on its own (`mergeImported`). For each row: why it was
 * skipped, or null.
 */
export async function mergeImportedMany(
  services: Deps,
  meta: EventMetadata,
  merges: Merge[],
  o: MergeOptions,
): Promise<(string | null)[]> {
  const reasons: (string | null | undefined)[] = merges.map(() => undefined);
  const histories = await Promise.all(
    merges.map((m) => m.history ?? services.store.readStream(contactStream(m.contactId))),
  );
  const live = merges.flatMap(({ contactId, row }, i) => {
    const state = rebuildState(contactDecider, histories[i]);
    return isVisibleTo(state, meta) ? [{ contactId, row, i, state }] : [];
  });
  const currents = await openPersonalDataMany<ContactPersonalData>(
    services.db,
    live.map(({ contactId, state }) => ({ subject: contactId, sealed: state.personal })),
  );
  const keyOf = emailKeysOf(services, meta);
  const changes = live.flatMap((l, k) => {
    const current = currents[k];
    if (!current) return [];
    const properties = mergedProperties(current, l.row, o);
    if (!properties) {
      reasons[l.i] = tooMany(o);
      return [];
    }
    const { firstName, lastName } = l.row;
    const next = patched(l.state, current, { firstName, lastName, properties });
    // A contact whose address would need another claim (its key made anew) is merged on its own.
    if (next && keyOf(next.personal.email) !== l.state.emailKey) return [];
    return [{ ...l, next }];
  });
  const updated = changes.filter((c) => c.next !== null);
  const sealed = await sealPersonalDataMany(
    services.db,
    updated.map(({ contactId, next }) => ({ subject: contactId, value: next!.personal })),
  );
  const personal = new Map(updated.map((c, k) => [c.i, sealed[k]]));
  await Promise.all(
    changes.map(async ({ i, contactId, state, next }) => {
      const sealedNow = next ? personal.get(i) : undefined;
      // Deleted since it was read (its data forgotten): merged on its own, which finds it gone.
      if (next && !sealedNow) return;
      const update = next && {
        emailKey: state.emailKey,
        personal: sealedNow!,
        unsubscribed: next.unsubscribed,
        consentGivenAt: next.consentGivenAt,
      };
      const commands = mergeCommands(services, meta, contactId, o.audienceId, update);
      const appended = await handleCommand(
        services.store,
        contactStream(contactId),
        inSequence(contactDecider),
        commands,
        meta,
        { history: histories[i], retries: 0 },
      ).then(
        () => true,
        (error) => {
          if (!(error instanceof WrongExpectedRevisionError)) throw error;
          return false;
        },
      );
      if (appended) reasons[i] = null;
    }),
  );
  const alone = merges.flatMap(({ contactId, row }, i) =>
    reasons[i] === undefined ? [{ contactId, row, i }] : [],
  );
  await mapLimited(alone, ALONE_AT_ONCE, async ({ contactId, row, i }) => {
    reasons[i] = await mergeImported(services, meta, contactId, row, o);
  });
  return reasons as (string | null)[];
}

/** A merged row's commands on its contact: its update, when the row changes something, then its membership. */
function mergeCommands(
  services: Deps,
  meta: EventMetadata,
  contactId: string,
  audienceId: string | null,
  update: Omit<
    Extract<ContactCommand, { type: 'UpdateContact' }>,
    'type' | 'contactId' | 'orgId' | 'mode' | 'at'
  > | null,
): ContactCommand[] {
  const fields = { contactId, orgId: meta.orgId, mode: meta.mode, at: at(services) };
  const commands: ContactCommand[] = [];
  if (update) commands.push({ type: 'UpdateContact', ...fields, ...update });
  if (audienceId) commands.push({ type: 'AddContactToAudience', ...fields, audienceId });
  return commands;
}

/** An imported row into the contact that has its address, on its own; why not, when it cannot be. */
async function mergeImported(
  services: Deps,
  meta: EventMetadata,
  contactId: string,
  row: ImportedContact,
  o: MergeOptions,
): Promise<string | null> {
  // Merged into the contact as it is when the change is appended (a change that came in between is kept).
  let refused = false;
  const merge = async () => {
    await updateContact(services, meta, contactId, (current) => {
      const properties = mergedProperties(current, row, o);
      refused = properties === null;
      return properties ? { firstName: row.firstName, lastName: row.lastName, properties } : {};
    });
    // Its membership alone: the update, if any, is appended already.
    const [join] = mergeCommands(services, meta, contactId, o.audienceId, null);
    if (join && !refused)
      await handleCommand(services.store, contactStream(contactId), contactDecider, join, meta);
  };
  const gone = await merge().then(
    () => false,
    (error) => {
      // Not written yet (still being created), or deleted before or while the row was merged: skipped.
      if (error instanceof AppError && error.code === 'not_found') return true;
      throw error;
    },
  );
  if (gone) return BUSY;
  if (refused) return tooMany(o);
  return null;
}
