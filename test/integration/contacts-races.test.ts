import { describe, expect, it } from 'vitest';
import { contactEmailDecider } from '../../domain/contacts/contact.decider.ts';
import { ManualClock } from '../../platform/clock.ts';
import { rebuildState } from '../../platform/eventstore/command.ts';
import { WrongExpectedRevisionError } from '../../platform/eventstore/types.ts';
import { newId } from '../../platform/ids.ts';
import { openPersonalData } from '../../platform/personal-data.ts';
import type { ImportedContact } from '../../processes/contact-import/contact-import-cursor.ts';
import { importContacts } from '../../processes/contact-import/import-contacts.ts';
import {
  createContact,
  deleteContact,
  unsubscribeContact,
  updateContact,
} from '../../write-side/contacts/contact.commands.ts';
import { claimEmail, emailKeyOf, readContact } from '../../write-side/contacts/contact-streams.ts';
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

  it('a delete that fails after the contact is deleted has forgotten its personal data already', async () => {
    const services = svc.postline.services;
    const { contactId } = await createContact(services, meta(), input('erased@race.example.org'));
    // The store, which fails (a crash, the database gone) when the address is released.
    const store = new Proxy(services.store, {
      get(target, prop, receiver) {
        if (prop === 'append')
          return async (...args: Parameters<typeof target.append>) => {
            if (args[0].startsWith('contactemail-')) throw new Error('the process stopped here');
            return target.append(...args);
          };
        const value = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    await deleteContact({ ...services, store }, meta(), contactId).catch(() => {});
    // The contact is deleted: a second DELETE is a 404, and its data can no longer be read.
    await expect(deleteContact(services, meta(), contactId)).rejects.toMatchObject({ code: 'not_found' });
    const { rows } = await services.db.query(
      'SELECT 1 FROM personal_data_keys WHERE subject = $1 AND key IS NOT NULL',
      [contactId],
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

describe('changes under races', () => {
  const meta = () => ({ orgId: orgs.acme.orgId, mode: 'live' as const, actor: 'test' });

  it('a change decided on a contact that changed meanwhile keeps the other changes: an unsubscribe, a name, a new address', async () => {
    const services = svc.postline.services;
    const { contactId } = await createContact(services, meta(), input('before@race.example.org'));
    const held = heldAtSealing();
    const update = updateContact(held.services, meta(), contactId, { firstName: 'Ann' });
    await held.reached; // read and opened, about to seal
    await unsubscribeContact(services, meta(), contactId, {
      topicId: null,
      broadcastId: null,
      emailId: null,
    });
    await updateContact(services, meta(), contactId, { lastName: 'Lee', email: 'after@race.example.org' });
    held.release();
    await update;
    const state = await readContact(services, contactId);
    if (!state.exists) throw new Error('no contact');
    expect(state.unsubscribed).toBe(true);
    expect(await openPersonalData(services.db, contactId, state.personal)).toEqual({
      email: 'after@race.example.org',
      firstName: 'Ann',
      lastName: 'Lee',
      properties: {},
    });
    // The contact holds the address it has, and only that one.
    const holder = async (email: string) =>
      rebuildState(
        contactEmailDecider,
        await services.store.readStream(`contactemail-${emailKeyOf(services, meta(), email)}`),
      ).holder;
    expect(state.emailKey).toBe(emailKeyOf(services, meta(), 'after@race.example.org'));
    expect(await holder('after@race.example.org')).toBe(contactId);
    expect(await holder('before@race.example.org')).toBe(null);
  });

  it('an imported row whose contact is deleted just before its merge is appended is skipped, and the rest of the batch written', async () => {
    const services = svc.postline.services;
    const audienceId = (await orgs.acme.live.post('/v1/audiences', { name: 'Deleted meanwhile' })).body.id;
    const { contactId } = await createContact(services, meta(), input('gone@race.example.org'));
    // The store, which deletes the contact when the row's change of it is about to be appended: the change
    // conflicts, and merged again on its own the row finds no contact.
    const store = new Proxy(services.store, {
      get(target, prop, receiver) {
        if (prop === 'append')
          return async (...args: Parameters<typeof target.append>) => {
            if (args[0] === `contact-${contactId}` && args[1][0]?.type === 'ContactUpdated')
              await deleteContact(services, meta(), contactId);
            return target.append(...args);
          };
        const value = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const rows: ImportedContact[] = [
      { contactId: newId('con'), line: 2, email: 'gone@race.example.org', properties: { plan: 'pro' } },
      { contactId: newId('con'), line: 3, email: 'fresh@race.example.org', properties: {} },
    ];
    expect(
      await importContacts({ ...services, store }, meta(), rows, { audienceId, maxProperties: 50 }),
    ).toEqual({
      created: 1,
      updated: 0,
      skipped: [{ line: 2, reason: 'email: its contact was being created or deleted; import the row again' }],
    });
  });

  it('an imported row merged into a contact that changed meanwhile keeps the other change and the unsubscribe', async () => {
    const services = svc.postline.services;
    const { contactId } = await createContact(services, meta(), {
      ...input('merged@race.example.org'),
      properties: { plan: 'free' },
    });
    const held = heldAtSealing();
    const row = {
      contactId: newId('con'),
      line: 2,
      email: 'merged@race.example.org',
      properties: { city: 'Oslo' },
    };
    const imported = importContacts(held.services, meta(), [row], { audienceId: null, maxProperties: 50 });
    await held.reached; // the row found the contact, read it and merged its properties: about to seal
    await updateContact(services, meta(), contactId, { properties: { plan: 'pro' } });
    await unsubscribeContact(services, meta(), contactId, {
      topicId: null,
      broadcastId: null,
      emailId: null,
    });
    held.release();
    expect(await imported).toEqual({ created: 0, updated: 1, skipped: [] });
    const state = await readContact(services, contactId);
    if (!state.exists) throw new Error('no contact');
    expect(state.unsubscribed).toBe(true);
    expect(await openPersonalData(services.db, contactId, state.personal)).toMatchObject({
      properties: { plan: 'pro', city: 'Oslo' },
    });
  });

  it('a new address whose change gives up (the contact kept changing) goes back: another contact can take it', async () => {
    const services = svc.postline.services;
    const { contactId } = await createContact(services, meta(), input('stays@race.example.org'));
    // The store, whose every change of the contact loses its race, as if another one always came first.
    const store = new Proxy(services.store, {
      get(target, prop, receiver) {
        if (prop === 'append')
          return async (...args: Parameters<typeof target.append>) => {
            if (args[0] === `contact-${contactId}`) throw new WrongExpectedRevisionError(args[0], 0, 1);
            return target.append(...args);
          };
        const value = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const moved = updateContact({ ...services, store }, meta(), contactId, {
      email: 'wanted@race.example.org',
    });
    await expect(moved).rejects.toMatchObject({ code: 'concurrent_modification' });
    const holder = async (email: string) =>
      rebuildState(
        contactEmailDecider,
        await services.store.readStream(`contactemail-${emailKeyOf(services, meta(), email)}`),
      ).holder;
    expect(await holder('stays@race.example.org')).toBe(contactId);
    expect(await holder('wanted@race.example.org')).toBe(null);
    const other = await createContact(services, meta(), input('wanted@race.example.org'));
    expect(await holder('wanted@race.example.org')).toBe(other.contactId);
  });
});
