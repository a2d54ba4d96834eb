import { contactDecider, contactEmailDecider } from '../../domain/contacts/contact.decider.ts';
import {
  type ContactPersonalData,
  contactEmailStream,
  contactStream,
} from '../../domain/contacts/contact.events.ts';
import { handleCommand, rebuildState } from '../../platform/eventstore/command.ts';
import { type EventMetadata, WrongExpectedRevisionError } from '../../platform/eventstore/types.ts';
import { sealPersonalDataMany } from '../../platform/personal-data.ts';
import {
  at,
  claimEmail,
  type Deps,
  emailKeysOf,
  isAddressTaken,
} from '../../write-side/contacts/contact-streams.ts';
import type { ImportedContact } from './contact-import-cursor.ts';
import { type Merge, mergeImportedMany } from './merge-imported.ts';

export interface ImportedBatch {
  created: number;
  updated: number;
  skipped: { line: number; reason: string }[];
}

/**
 * Writes a batch of imported rows (distinct addresses) under the address rule. A row whose address is free gets
 * a new contact in `audienceId`; one whose address belongs to a contact updates it: the names the row gives, its
 * properties merged by name (at most `maxProperties`), and it joins the audience (merge-imported.ts). The appends
 * and reads of the whole batch are in flight together and share statements (the store's group commit); streams are
 * not read first unless `mayExist`. A row written already by an earlier run of the same import is found as its own
 * and counted as created again.
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
  // Every row's first claim at once, so that their appends share statements; a claim refused there (its address
  // taken, or claimed by an earlier run) is settled after, the refused rows' reads sharing statements too.
  const tried = await Promise.all(
    rows.map(async (row) => {
      const emailKey = keyOf(row.email);
      const claimed = await claimEmail(services, meta, emailKey, row.contactId, {
        likelyFree: unwritten,
        retries: 0,
      }).then(
        () => true,
        (error) => {
          // Its address taken, or its stream there already (an earlier claim, whoever made it).
          if (isAddressTaken(error) || error instanceof WrongExpectedRevisionError) return false;
          throw error;
        },
      );
      return { row, emailKey, claimed };
    }),
  );
  const refused = tried.filter((t) => !t.claimed);
  const holders = await Promise.all(
    refused.map(({ row, emailKey }) => claimOrHolder(services, meta, emailKey, row.contactId)),
  );
  const holderOf = new Map(refused.map((t, i) => [t.row, holders[i]]));
  const claims = tried.map(({ row, emailKey }) => ({ row, emailKey, holder: holderOf.get(row) ?? null }));
  const claimed = claims.filter((c) => c.holder === null);
  const sealed = await sealPersonalDataMany(
    services.db,
    claimed.map(({ row }) => ({
      subject: row.contactId,
      value: {
        email: row.email,
        firstName: row.firstName ?? null,
        lastName: row.lastName ?? null,
        properties: row.properties,
      } satisfies ContactPersonalData,
    })),
  );
  const skipped: ImportedBatch['skipped'] = [];
  // A row whose contact an earlier run wrote and someone deleted since (its data forgotten): not written again.
  for (const [i, { row }] of claimed.entries())
    if (sealed[i] === null)
      skipped.push({ line: row.line, reason: 'email: its contact was deleted meanwhile' });
  const fresh = claimed.flatMap((c, i) => (sealed[i] === null ? [] : [{ ...c, personal: sealed[i] }]));
  await Promise.all(
    fresh.map(({ row, emailKey, personal }) =>
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
          personal,
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
  const merges = claims.flatMap(({ row, holder }) => (holder === null ? [] : [{ row, ...holder }]));
  const reasons = await mergeImportedMany(services, meta, merges, o);
  let updated = 0;
  for (const [i, reason] of reasons.entries())
    if (reason) skipped.push({ line: merges[i].row.line, reason });
    else updated++;
  return { created: fresh.length, updated, skipped: skipped.sort((a, b) => a.line - b.line) };
}

/**
 * After a first claim that was refused: the address claimed for `contactId` (null), or the contact that holds it,
 * with the stream it was read from. A holder that lives keeps its address (contactEmailDecider), which needs no
 * claim to learn; an address free, or held by a contact deleted or never written, is claimed under the address
 * rule, and again once if another claimant came first.
 */
async function claimOrHolder(
  services: Deps,
  meta: EventMetadata,
  emailKey: string,
  contactId: string,
): Promise<Pick<Merge, 'contactId' | 'history'> | null> {
  for (let attempt = 0; ; attempt++) {
    const claim = rebuildState(
      contactEmailDecider,
      await services.store.readStream(contactEmailStream(emailKey)),
    );
    const holder = claim.holder;
    if (holder === contactId) return null;
    if (holder !== null) {
      const history = await services.store.readStream(contactStream(holder));
      const contact = rebuildState(contactDecider, history);
      if (contact.exists && !contact.deleted) return { contactId: holder, history };
    }
    try {
      await claimEmail(services, meta, emailKey, contactId);
      return null;
    } catch (error) {
      // Refused twice, the address changing hands meanwhile: merged into the holder last read, or skipped as
      // busy if that one is not there (merge-imported.ts).
      if (!isAddressTaken(error)) throw error;
      if (attempt > 0) return { contactId: holder ?? contactId };
    }
  }
}
