import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { newId } from '../../platform/ids.ts';
import { openPersonalData } from '../../platform/personal-data.ts';
import { importContacts } from '../../processes/contact-import/import-contacts.ts';
import { createContact, deleteContact, updateContact } from '../../write-side/contacts/contact.commands.ts';
import { claimEmail, emailKeyOf } from '../../write-side/contacts/contact-streams.ts';
import { useTwoOrgs } from '../support/service.ts';

/** UNWRITTEN_CLAIM_GRACE_MS: a few minutes. */
const GRACE_MS = 5 * 60_000;
const clock = new ManualClock('2026-03-01T09:00:00Z');
const { svc, orgs } = useTwoOrgs(() => ({ clock }));

const input = (email: string) => ({
  email,
  firstName: null,
  lastName: null,
  properties: {},
  unsubscribed: false,
  consentGivenAt: null,
  audienceIds: [],
});

/**
 * The services, whose first statement that seals personal data (`INSERT INTO personal_data_keys`) waits until
 * `release` is called: `reached` settles when it waits. Widens the window between a read and the seal after it.
 */
function heldAtSealing() {
  const services = svc.postline.services;
  let release!: () => void;
  let reach!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const reached = new Promise<void>((r) => {
    reach = r;
  });
  let held = false;
  const db = new Proxy(services.db, {
    get(target, prop, receiver) {
      if (prop === 'query')
        return async (sql: string, params?: unknown[]) => {
          if (!held && /INSERT INTO personal_data_keys/.test(sql)) {
            held = true;
            reach();
            await gate;
          }
          return target.query(sql, params);
        };
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { services: { ...services, db } as typeof services, reached, release };
}

const failureCode = (e: unknown) => (e as { code?: string }).code ?? String(e);

describe('one address, one contact, under races', () => {
  const meta = () => ({ orgId: orgs.acme.orgId, mode: 'live' as const, actor: 'test' });

  it('many concurrent creates of one address, in any case, make exactly one contact', async () => {
    const spellings = ['many@example.org', 'MANY@example.org', 'Many@Example.org', ' many@example.ORG'];
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        createContact(svc.postline.services, meta(), input(spellings[i % 4])),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [failureCode(r.reason)] : []));
    expect(new Set(refused)).toEqual(new Set(['contact_exists']));
  });

  it('a create that meets the claim of a contact still being created is refused with contact_exists', async () => {
    const first = heldAtSealing();
    const creating = createContact(first.services, meta(), input('slow@example.org'));
    await first.reached; // claimed, not yet written
    await expect(
      createContact(svc.postline.services, meta(), input('SLOW@example.org')),
    ).rejects.toMatchObject({
      code: 'contact_exists',
    });
    first.release();
    const { contactId } = await creating;
    // And the import meets it the same way: the row is not written as a second contact.
    const second = heldAtSealing();
    const another = createContact(second.services, meta(), input('slow2@example.org'));
    await second.reached;
    const row = { contactId: newId('con'), line: 2, email: 'Slow2@example.org', properties: {} };
    const imported = await importContacts(svc.postline.services, meta(), [row], {
      audienceId: null,
      maxProperties: 50,
    });
    expect(imported).toEqual({
      created: 0,
      updated: 0,
      skipped: [{ line: 2, reason: 'email: its contact was being created or deleted; import the row again' }],
    });
    second.release();
    await another;
    expect((await svc.postline.services.store.readStream(`contact-${row.contactId}`)).length).toBe(0);
    expect(contactId).toMatch(/^con_/);
  });

  it('a claim left without its contact (a crash) frees the address once the grace after it is over', async () => {
    const services = svc.postline.services;
    await claimEmail(services, meta(), emailKeyOf(services, meta(), 'crashed@example.org'), newId('con'));
    clock.advance(GRACE_MS - 1000);
    await expect(createContact(services, meta(), input('crashed@example.org'))).rejects.toMatchObject({
      code: 'contact_exists',
    });
    clock.advance(1000);
    const { contactId } = await createContact(services, meta(), input('Crashed@example.org'));
    expect(contactId).toMatch(/^con_/);
  });
});

describe('crypto-shredding under races', () => {
  const meta = () => ({ orgId: orgs.acme.orgId, mode: 'live' as const, actor: 'test' });

  it('a resumed import does not write again a contact an earlier run wrote and someone deleted since', async () => {
    const services = svc.postline.services;
    const row = { contactId: newId('con'), line: 2, email: 'resumed@example.org', properties: {} };
    const o = { audienceId: null, maxProperties: 50 };
    expect((await importContacts(services, meta(), [row], o)).created).toBe(1);
    await deleteContact(services, meta(), row.contactId);
    expect(await importContacts(services, meta(), [row], { ...o, mayExist: true })).toEqual({
      created: 0,
      updated: 0,
      skipped: [{ line: 2, reason: 'email: its contact was deleted meanwhile' }],
    });
    const { rows } = await services.db.query(
      'SELECT 1 FROM personal_data_keys WHERE subject = $1 AND key IS NOT NULL',
      [row.contactId],
    );
    expect(rows).toHaveLength(0);
  });

  it('an update that seals after a delete forgot the contact is not_found, and makes no key again', async () => {
    const services = svc.postline.services;
    const { contactId } = await createContact(services, meta(), input('shred@example.org'));
    const [created] = await services.store.readStream(`contact-${contactId}`);
    const held = heldAtSealing();
    const update = updateContact(held.services, meta(), contactId, { firstName: 'X' }).then(
      () => 'updated',
      failureCode,
    );
    await held.reached; // read and opened, about to seal
    await deleteContact(services, meta(), contactId);
    held.release();
    expect(await update).toBe('not_found');
    const { rows } = await services.db.query(
      'SELECT 1 FROM personal_data_keys WHERE subject = $1 AND key IS NOT NULL',
      [contactId],
    );
    expect(rows).toHaveLength(0);
    expect(
      await openPersonalData(services.db, contactId, (created.data as { personal: string }).personal),
    ).toBe(null);
  });
});
