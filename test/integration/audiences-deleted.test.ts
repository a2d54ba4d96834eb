import { Readable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../platform/db/migrations.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import { importedContactId } from '../../processes/contact-import/contact-import-cursor.ts';
import { IMPORT_BATCH_ROWS, workContactImport } from '../../processes/contact-import/contact-import-run.ts';
import { importContacts } from '../../processes/contact-import/import-contacts.ts';
import { contactsProjection } from '../../projections/contacts.projection.ts';
import { rebuildProjection } from '../../projections/rebuild.ts';
import { contactsMigrations } from '../../read-side/contacts/contacts.schema.ts';
import { startContactImport } from '../../write-side/contact-imports/contact-import.commands.ts';
import { createContact } from '../../write-side/contacts/contact.commands.ts';
import { onContact } from '../../write-side/contacts/contact-streams.ts';
import type { ApiClient } from '../support/service.ts';
import { useTwoOrgs } from '../support/service.ts';

const { svc, orgs } = useTwoOrgs();
let client: ApiClient;
let meta: EventMetadata;
beforeAll(() => {
  client = orgs.acme.live;
  meta = { orgId: orgs.acme.orgId, mode: 'live', actor: 'test' };
});

const ok = <T extends { status: number; body: any }>(r: T, status = 200) => {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
};
const audience = async (name: string) => ok(await client.post('/v1/audiences', { name }), 201).id as string;
const contact = async (email: string, audience_ids: string[]) =>
  ok(await client.post('/v1/contacts', { email, audience_ids }), 201).id as string;
const audiencesOf = async (id: string) => ok(await client.get(`/v1/contacts/${id}`)).audience_ids;
/** Waits until the read models have taken in everything appended so far. */
const settled = async (...names: string[]) => {
  const { store, readYourWrites } = svc.postline.services;
  await readYourWrites.waitFor(names, await store.headPosition({ committed: true }));
};
const UNKNOWN = 'aud_01kunknown0000000000000000';

describe('a deleted audience', () => {
  it('leaves its contacts, and leaves their audience_ids and the audience filter, as an unknown audience does', async () => {
    const [gone, kept] = [await audience('Gone'), await audience('Kept')];
    const both = await contact('both@gone.example.org', [gone, kept]);
    const only = await contact('only@gone.example.org', [gone]);
    // An unknown audience: no contact in the list, 404 on the path.
    const unknownList = ok(await client.get(`/v1/contacts?audience_id=${UNKNOWN}`));
    expect(unknownList.data).toEqual([]);
    expect((await client.get(`/v1/segments/${UNKNOWN}/contacts`)).status).toBe(404);

    ok(await client.delete(`/v1/audiences/${gone}`));
    // Read right after the DELETE (it waits for the contacts too).
    expect(await audiencesOf(both)).toEqual([kept]);
    expect(await audiencesOf(only)).toEqual([]);
    expect(ok(await client.get(`/v1/contacts?audience_id=${gone}`))).toEqual(unknownList);
    expect((await client.get(`/v1/segments/${gone}/contacts`)).status).toBe(404);
    expect(ok(await client.get(`/v1/contacts?audience_id=${kept}`)).data.map((c: any) => c.id)).toEqual([
      both,
    ]);
    expect(ok(await client.get(`/v1/audiences/${kept}`)).contacts).toBe(1);
  });

  it('gains no member from a write that checked it before its deletion', async () => {
    const gone = await audience('Raced');
    const before = await contact('before@raced.example.org', []);
    ok(await client.delete(`/v1/audiences/${gone}`));
    // A contact created, one added and an import's batch, each past its check of the audience before the delete.
    const { contactId: created } = await createContact(svc.postline.services, meta, {
      email: 'created@raced.example.org',
      firstName: null,
      lastName: null,
      properties: {},
      unsubscribed: false,
      consentGivenAt: null,
      audienceIds: [],
    });
    await onContact(svc.postline.services, meta, 'AddContactToAudience', before, { audienceId: gone });
    await onContact(svc.postline.services, meta, 'AddContactToAudience', created, { audienceId: gone });
    const rows = [0, 1].map((i) => ({
      contactId: importedContactId('imp_raced000000', i),
      line: i + 2,
      email: i === 0 ? 'imported@raced.example.org' : 'before@raced.example.org',
      properties: {},
    }));
    expect(
      await importContacts(svc.postline.services, meta, rows, { audienceId: gone, maxProperties: 50 }),
    ).toMatchObject({ created: 1, updated: 1 });
    await settled('contacts');
    for (const id of [before, created, rows[0].contactId]) expect(await audiencesOf(id)).toEqual([]);
    expect(ok(await client.get(`/v1/contacts?audience_id=${gone}`)).data).toEqual([]);

    // The same once the read model is rebuilt from the log.
    const { db, store, log } = svc.postline.services;
    await rebuildProjection(db, store, contactsProjection, log);
    for (const id of [before, created, rows[0].contactId]) expect(await audiencesOf(id)).toEqual([]);
  });

  it('stops an import into it: the job fails, naming why, and writes no row after', async () => {
    const gone = await audience('Imported');
    const rows = IMPORT_BATCH_ROWS * 2 + 500;
    const lines = Array.from({ length: rows }, (_, i) => `r${i}@stopped.example.org`);
    const { importId } = await startContactImport(svc.postline.services, meta, {
      audienceId: gone,
      file: Readable.from([Buffer.from(`email\n${lines.join('\n')}\n`)]),
      maxBytes: 1024 * 1024,
    });
    // A first run writes the batches it had started (two) and stops; the audience is deleted meanwhile.
    await workContactImport(svc.postline.services, importId, { pause: () => true });
    ok(await client.delete(`/v1/audiences/${gone}`));
    const state = await workContactImport(svc.postline.services, importId);
    expect(state).toMatchObject({ status: 'failed', processed: 2 * IMPORT_BATCH_ROWS });
    await settled('contact_imports', 'contacts');
    expect(ok(await client.get(`/v1/audiences/${gone}/contacts/import/${importId}`))).toMatchObject({
      status: 'failed',
      rows_total: rows,
      rows_processed: 2 * IMPORT_BATCH_ROWS,
      rows_created: 2 * IMPORT_BATCH_ROWS,
      error: {
        line: null,
        message:
          'The audience was deleted during the import: the rows written before stay as contacts (without the audience), the others were not imported.',
      },
    });
    const { rows: counted } = await svc.postline.services.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM contacts WHERE email_lower LIKE '%@stopped.example.org'`,
    );
    expect(counted[0].n).toBe(2 * IMPORT_BATCH_ROWS);
    expect(ok(await client.get('/v1/contacts?email=r0@stopped.example.org')).data[0].audience_ids).toEqual(
      [],
    );
  });

  it('is taken out of memberships written before this version, by the migration', async () => {
    const gone = await audience('Old');
    const member = await contact('old@migrated.example.org', [gone]);
    ok(await client.delete(`/v1/audiences/${gone}`));
    const { db } = svc.postline.services;
    // As a database of the version before left it: the membership there, the deletion not known to the contacts.
    await db.query('INSERT INTO contact_audiences VALUES ($1, $2)', [member, gone]);
    await db.query('DELETE FROM contact_deleted_audiences WHERE audience_id = $1', [gone]);
    await db.query(`DELETE FROM schema_migrations WHERE id = 'contacts-002'`);
    await migrate(db, contactsMigrations);
    expect(await audiencesOf(member)).toEqual([]);
    const { rows } = await db.query('SELECT 1 FROM contact_deleted_audiences WHERE audience_id = $1', [gone]);
    expect(rows.length).toBe(1);
  });
});
