import { contactDecider, contactEmailDecider } from '../../domain/contacts/contact.decider.ts';
import {
  type ContactPersonalData,
  contactEmailStream,
  contactStream,
} from '../../domain/contacts/contact.events.ts';
import { AppError } from '../../platform/errors.ts';
import { handleCommand, rebuildState } from '../../platform/eventstore/command.ts';
import { type EventMetadata, WrongExpectedRevisionError } from '../../platform/eventstore/types.ts';
import { sealPersonalDataMany } from '../../platform/personal-data.ts';
import { at, claimEmail, type Deps, emailKeysOf } from '../../write-side/contacts/contact-streams.ts';
import { mergeImportedMany } from './merge-imported.ts';

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
 * properties merged by name (at most `maxProperties`), and it joins the audience (merge-imported.ts). The appends
 * and reads of the whole batch are in flight together and share statements (the store's group commit); streams are
 * not read first unless `mayExist`. A row written already by an earlier run of the same import is found as its own and counted as
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
  // Every row's first claim at once, so that their appends share statements; a claim refused there (its address
  // taken, or claimed by an earlier run) is settled after, the refused rows' reads sharing statements too.
  const tried = await Promise.all(
    rows.map(async (row) => {
      const emailKey = keyOf(row.email);
      const outcome = await claimEmail(services, meta, emailKey, row.contactId, {
        likelyFree: unwritten,
        retries: 0,
      }).then(
        () => 'claimed' as const,
        (error) => {
          if (isTaken(error)) return 'taken' as const;
          if (error instanceof WrongExpectedRevisionError) return 'raced' as const;
          throw error;
        },
      );
      return { row, emailKey, outcome };
    }),
  );
  const refused = tried.filter((t) => t.outcome !== 'claimed');
  const holders = await Promise.all(
    refused.map(({ row, emailKey, outcome }) =>
      claimOrHolder(services, meta, emailKey, row.contactId, outcome === 'taken'),
    ),
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
  const merges = claims.flatMap(({ row, holder }) => (holder === null ? [] : [{ row, contactId: holder }]));
  const reasons = await mergeImportedMany(services, meta, merges, o);
  let updated = 0;
  for (const [i, reason] of reasons.entries())
    if (reason) skipped.push({ line: merges[i].row.line, reason });
    else updated++;
  return { created: fresh.length, updated, skipped: skipped.sort((a, b) => a.line - b.line) };
}

const isTaken = (error: unknown) => error instanceof AppError && error.code === 'contact_exists';

/**
 * After a first claim that was `taken` (the address is another contact's) or raced (the store refused the append):
 * the address claimed for `contactId` (null), or the contact that holds it. A holder that released it between
 * the refusal and the read: claimed again, once.
 */
async function claimOrHolder(
  services: Deps,
  meta: EventMetadata,
  emailKey: string,
  contactId: string,
  taken: boolean,
) {
  for (let attempt = 0; ; attempt++) {
    if (!taken)
      try {
        await claimEmail(services, meta, emailKey, contactId);
        return null;
      } catch (error) {
        if (!isTaken(error)) throw error;
      }
    const { holder } = rebuildState(
      contactEmailDecider,
      await services.store.readStream(contactEmailStream(emailKey)),
    );
    if (holder !== null || attempt > 0) return holder ?? contactId;
    taken = false;
  }
}
