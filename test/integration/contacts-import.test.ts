import { Readable } from 'node:stream';
import { request } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { ContactImportProcess } from '../../processes/contact-import/contact-import.process.ts';
import {
  ContactImportCursor,
  importedContactId,
} from '../../processes/contact-import/contact-import-cursor.ts';
import {
  ANALYZE_AFTER_ROWS,
  IMPORT_BATCH_ROWS,
  workContactImport,
} from '../../processes/contact-import/contact-import-run.ts';
import { importContacts } from '../../processes/contact-import/import-contacts.ts';
import {
  readContactImport,
  startContactImport,
} from '../../write-side/contact-imports/contact-import.commands.ts';
import { useTwoOrgs } from '../support/service.ts';

const MAX_BYTES = 64 * 1024;
const { svc, orgs } = useTwoOrgs({ env: { CONTACT_IMPORT_MAX_BYTES: String(MAX_BYTES) } });
let worker: ContactImportProcess;
let audience: string;
beforeAll(async () => {
  worker = new ContactImportProcess(svc.postline.services);
  audience = (await orgs.acme.live.post('/v1/audiences', { name: 'Newsletter' })).body.id;
});

const csv = { 'content-type': 'text/csv' };
const upload = (body: string, audienceId = audience, client = orgs.acme.live) =>
  client.post(`/v1/audiences/${audienceId}/contacts/import`, body, csv);
const job = (id: string, audienceId = audience, client = orgs.acme.live) =>
  client.get(`/v1/audiences/${audienceId}/contacts/import/${id}`);
const members = async (audienceId: string, client = orgs.acme.live) => {
  const all: any[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await client.get(
      `/v1/contacts?audience_id=${audienceId}&limit=100${after ? `&starting_after=${after}` : ''}`,
    );
    all.push(...page.body.data);
    if (!page.body.has_more) return all;
    after = page.body.data.at(-1).id;
  }
};
/** Works the queued imports, then waits until the read models show the last one's end. */
async function work(importId: string) {
  await worker.runOnce();
  const last = (await svc.postline.services.store.readStream(`contactimport-${importId}`)).at(-1);
  await svc.postline.services.readYourWrites.waitFor(['contact_imports', 'contacts'], last?.position);
}

describe('contact import from CSV', () => {
  it('imports good rows, skips and reports bad ones with their lines, updates existing contacts', async () => {
    const existing = await orgs.acme.live.post('/v1/contacts', {
      email: 'Kept@Example.org',
      first_name: 'Kept',
      last_name: 'Before',
      properties: { plan: 'free', since: '2020' },
    });
    const file = [
      '\uFEFFEMAIL,First_Name,last_name,plan,city',
      'ann@example.org,Ann,Lee,pro,"Paris, France"',
      'not-an-address,Bob,,pro,Rome',
      'carl@example.org,"Carl ""CJ""",Jones,,Berlin',
      '',
      'ANN@example.org,Annie,,free,Oslo',
      'kept@example.org,,After,business,',
      'dora@example.org,Dora,,pro',
      `eve@example.org,${'x'.repeat(257)},,pro,Nice`,
      'fay@example.org,Fay,,pro,"Lyon',
      'Centre"',
      ',,,,',
      'gus@example.org,Gus,,,',
    ].join('\r\n');
    const started = await upload(file);
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    expect(started.body).toEqual({
      object: 'contact_import',
      id: expect.stringMatching(/^imp_[0-9a-z]+$/),
      audience_id: audience,
      status: 'queued',
      rows_total: null,
      rows_processed: 0,
      rows_created: 0,
      rows_updated: 0,
      rows_skipped: 0,
      invalid_rows: [],
      invalid_rows_truncated: false,
      error: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      finished_at: null,
    });
    const id = started.body.id;
    await work(id);
    const done = await job(id);
    expect(done.body).toMatchObject({
      status: 'completed',
      rows_total: 9,
      rows_processed: 9,
      rows_created: 4,
      rows_updated: 1,
      rows_skipped: 4,
      invalid_rows: [
        { line: 3, reason: 'email: must be a valid email address' },
        { line: 6, reason: 'email: repeats the address of line 2' },
        { line: 8, reason: 'has 4 fields where the header has 5' },
        { line: 9, reason: 'first_name: must be at most 256 characters' },
      ],
      invalid_rows_truncated: false,
      error: null,
      finished_at: expect.any(String),
    });

    // The file is gone once the import finished: the contacts hold what it brought.
    const [startedEvent] = await svc.postline.services.store.readStream(`contactimport-${id}`);
    const blobKey = (startedEvent.data as { blobKey: string }).blobKey;
    expect(await svc.postline.services.blobs.exists(blobKey)).toBe(false);

    const inAudience = await members(audience);
    const byEmail = Object.fromEntries(inAudience.map((c) => [c.email.toLowerCase(), c]));
    expect(Object.keys(byEmail).sort()).toEqual([
      'ann@example.org',
      'carl@example.org',
      'fay@example.org',
      'gus@example.org',
      'kept@example.org',
    ]);
    expect(byEmail['ann@example.org']).toMatchObject({
      first_name: 'Ann',
      last_name: 'Lee',
      properties: { plan: 'pro', city: 'Paris, France' },
      unsubscribed: false,
      audience_ids: [audience],
    });
    // Quotes doubled inside a quoted field, an empty cell left out, a field over two lines.
    expect(byEmail['carl@example.org']).toMatchObject({
      first_name: 'Carl "CJ"',
      properties: { city: 'Berlin' },
    });
    expect(byEmail['fay@example.org']).toMatchObject({
      first_name: 'Fay',
      properties: { plan: 'pro', city: 'Lyon\r\nCentre' },
    });
    expect(byEmail['gus@example.org'].properties).toEqual({});
    // The existing contact: what the row gives replaces, what it leaves empty stays; properties merge by name.
    expect(byEmail['kept@example.org']).toMatchObject({
      id: existing.body.id,
      email: 'Kept@Example.org',
      first_name: 'Kept',
      last_name: 'After',
      properties: { plan: 'business', since: '2020' },
      audience_ids: [audience],
    });
  });

  it('refuses what is not an import: unknown or foreign audience, other mode, wrong type, empty, no email column, too large, a sending key', async () => {
    const good = 'email\nx@example.org\n';
    const theirs = (await orgs.other.live.post('/v1/audiences', { name: 'Theirs' })).body.id;
    const expectError = (r: any, status: number, code: string) =>
      expect([r.status, r.body.error?.code, typeof r.body.error?.message]).toEqual([status, code, 'string']);
    expectError(await upload(good, 'aud_01unknown'), 404, 'not_found');
    expectError(await upload(good, 'not-an-id'), 404, 'not_found');
    expectError(await upload(good, theirs), 404, 'not_found');
    expectError(await upload(good, audience, orgs.acme.test), 404, 'not_found');
    expectError(
      await orgs.acme.live.post(`/v1/audiences/${audience}/contacts/import`, { email: 'x@example.org' }),
      415,
      'unsupported_content_type',
    );
    expectError(
      await orgs.acme.live.post(`/v1/audiences/${audience}/contacts/import`, good, {
        'content-type': 'text/csv; charset=iso-8859-1',
      }),
      415,
      'unsupported_content_type',
    );
    expect(
      (
        await orgs.acme.live.post(`/v1/audiences/${audience}/contacts/import`, good, {
          'content-type': 'text/csv; charset=UTF-8',
        })
      ).status,
    ).toBe(202);
    expectError(await upload(''), 422, 'validation_error');
    expectError(await upload('\uFEFF\r\n\r\n'), 422, 'validation_error');
    const noEmail = await upload('name,plan\nAnn,pro\n');
    expectError(noEmail, 422, 'validation_error');
    expect(noEmail.body.error.message).toContain('`email`');
    expectError(await upload('email,bad name\nx@example.org,1\n'), 422, 'validation_error');
    expectError(
      await upload(`email\n${'a@example.org\n'.repeat(MAX_BYTES / 14 + 10)}`),
      413,
      'body_too_large',
    );
    // Without a declared length the file is counted as it arrives.
    const chunked = await request(`${svc.baseUrl}/v1/audiences/${audience}/contacts/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${orgs.acme.liveKey}`, 'content-type': 'text/csv' },
      body: Readable.from(
        (function* () {
          yield Buffer.from('email\n');
          for (let i = 0; i < 20; i++) yield Buffer.from(`${'b@example.org\n'.repeat(MAX_BYTES / 140)}`);
        })(),
      ),
    });
    const chunkedBody = (await chunked.body.json()) as any;
    expect([chunked.statusCode, chunkedBody.error.code]).toEqual([413, 'body_too_large']);
    const sender = await orgs.acme.live.post('/v1/api-keys', {
      name: 'sender',
      permission: 'sending_access',
    });
    expectError(await upload(good, audience, svc.client(sender.body.key)), 403, 'insufficient_permission');
    // None of these left a job or a contact behind.
    const { rows } = await svc.postline.services.db.query(
      `SELECT count(*)::int AS n FROM contact_imports WHERE org_id = $1`,
      [orgs.other.orgId],
    );
    expect(rows[0].n).toBe(0);
  });

  it('keeps jobs and contacts to their organization and mode', async () => {
    const testAudience = (await orgs.acme.test.post('/v1/audiences', { name: 'Test list' })).body.id;
    const started = await upload('email,first_name\nmode@example.org,Test\n', testAudience, orgs.acme.test);
    expect(started.status).toBe(202);
    await work(started.body.id);
    expect((await job(started.body.id, testAudience, orgs.acme.test)).body.status).toBe('completed');
    expect((await job(started.body.id, testAudience, orgs.acme.live)).status).toBe(404);
    expect((await job(started.body.id, testAudience, orgs.other.live)).status).toBe(404);
    expect((await job(started.body.id, audience, orgs.acme.test)).status).toBe(404);
    expect((await members(testAudience, orgs.acme.test)).map((c) => c.email)).toEqual(['mode@example.org']);
    expect((await orgs.acme.live.get('/v1/contacts?email=mode@example.org')).body.data).toEqual([]);
  });

  it('skips rows with control characters in a name, and rows that are not valid UTF-8, each with its line and why', async () => {
    const file = Buffer.concat([
      Buffer.from('email,first_name,last_name,city,\n'),
      Buffer.from('ann@utf.example.org,Ann,Lee,Paris,\n'),
      Buffer.from('dan@utf.example.org,"Dan\r\nBcc: victim@rcpt.test",,Rome,\n'),
      Buffer.from('tab@utf.example.org,Tab,"A\tB",,\n'),
      // Latin-1, as a spreadsheet saves it: é is one byte, E9, which is not UTF-8.
      Buffer.from('bea@utf.example.org,B'),
      Buffer.from([0xe9]),
      Buffer.from('a,,Lyon,\n'),
      Buffer.from('kim@utf.example.org,Kim,,K'),
      Buffer.from([0xf6]),
      Buffer.from('ln,\n'),
      // A sequence cut short (the first two bytes of €), in a column the import ignores: the row is read.
      Buffer.from('ivy@utf.example.org,Ivy,,Oslo,'),
      Buffer.from([0xe2, 0x82]),
      Buffer.from('\n'),
      Buffer.from('zoe@utf.example.org,Zoë,Ørsted,Köln €,\n'),
    ]);
    const started = await request(`${svc.baseUrl}/v1/audiences/${audience}/contacts/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${orgs.acme.liveKey}`, 'content-type': 'text/csv' },
      body: file,
    });
    const body = (await started.body.json()) as any;
    expect(started.statusCode, JSON.stringify(body)).toBe(202);
    await work(body.id);
    const done = await job(body.id);
    expect(done.body).toMatchObject({
      status: 'completed',
      rows_total: 7,
      rows_created: 3,
      rows_skipped: 4,
      invalid_rows: [
        {
          line: 3,
          reason: 'first_name: must not contain control characters (line breaks, tabs and the like)',
        },
        {
          line: 5,
          reason: 'last_name: must not contain control characters (line breaks, tabs and the like)',
        },
        { line: 6, reason: 'first_name: is not valid UTF-8 (save the file as UTF-8)' },
        { line: 7, reason: 'city: is not valid UTF-8 (save the file as UTF-8)' },
      ],
    });
    const imported = Object.fromEntries(
      (await members(audience)).filter((c) => c.email.endsWith('@utf.example.org')).map((c) => [c.email, c]),
    );
    expect(Object.keys(imported).sort()).toEqual([
      'ann@utf.example.org',
      'ivy@utf.example.org',
      'zoe@utf.example.org',
    ]);
    expect(imported['zoe@utf.example.org']).toMatchObject({
      first_name: 'Zoë',
      last_name: 'Ørsted',
      properties: { city: 'Köln €' },
    });
    expect(JSON.stringify(imported)).not.toContain('\uFFFD');
  });

  it('refuses a file whose header row is not valid UTF-8', async () => {
    const file = Buffer.concat([
      Buffer.from('email,Stra'),
      Buffer.from([0xdf]),
      Buffer.from('e\nx@example.org,1\n'),
    ]);
    const started = await request(`${svc.baseUrl}/v1/audiences/${audience}/contacts/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${orgs.acme.liveKey}`, 'content-type': 'text/csv' },
      body: file,
    });
    const body = (await started.body.json()) as any;
    expect([started.statusCode, body.error]).toEqual([
      422,
      {
        type: 'validation_error',
        code: 'validation_error',
        message: 'The header row is not valid UTF-8: save the file as UTF-8.',
      },
    ]);
  });

  it('fails a file that is not CSV, naming the line, before writing any contact', async () => {
    const started = await upload('email,first_name\nok@example.org,Ok\nbad@example.org,"never closed\n');
    expect(started.status).toBe(202);
    await work(started.body.id);
    const failed = await job(started.body.id);
    expect(failed.body).toMatchObject({
      status: 'failed',
      rows_processed: 0,
      error: {
        line: expect.any(Number),
        message: 'The file is not valid CSV: a quoted field is not closed.',
      },
    });
    expect((await orgs.acme.live.get('/v1/contacts?email=ok@example.org')).body.data).toEqual([]);
  });

  it('resumes after a crash between a batch of contacts and its progress: nothing lost, nothing twice', async () => {
    const rows = IMPORT_BATCH_ROWS * 2 + 500;
    const lines = Array.from({ length: rows }, (_, i) => `r${i}@resume.example.org,R${i}`);
    const crashAudience = (await orgs.acme.live.post('/v1/audiences', { name: 'Resumed' })).body.id;
    // Larger than this service's limit for a request: started through the command the route calls.
    const { importId: id } = await startContactImport(
      svc.postline.services,
      { orgId: orgs.acme.orgId, mode: 'live', actor: 'test' },
      {
        audienceId: crashAudience,
        file: Readable.from([Buffer.from(`email,first_name\n${lines.join('\n')}\n`)]),
        maxBytes: 1024 * 1024,
      },
    );
    const services = svc.postline.services;
    // A first run stops as soon as it can: the batches it had in flight are written and recorded.
    await workContactImport(services, id, { pause: () => true });
    const state = await readContactImport(services, id);
    expect(state.exists && state.processed).toBe(2 * IMPORT_BATCH_ROWS);
    // It had written the next batch's contacts too, and crashed before recording that batch.
    const blob = state.exists ? state.blobKey : '';
    const cursor = await ContactImportCursor.open(services.blobs.stream(blob), id);
    await cursor.take(2 * IMPORT_BATCH_ROWS);
    const third = await cursor.take(IMPORT_BATCH_ROWS);
    await cursor.close();
    expect(third.contacts.length).toBe(500);
    await importContacts(services, { orgId: orgs.acme.orgId, mode: 'live', actor: 'test' }, third.contacts, {
      audienceId: crashAudience,
      maxProperties: 50,
    });
    // The process resumes from the log.
    await work(id);
    expect((await job(id, crashAudience)).body).toMatchObject({
      status: 'completed',
      rows_total: rows,
      rows_processed: rows,
      rows_created: rows,
      rows_updated: 0,
      rows_skipped: 0,
    });
    const imported = await members(crashAudience);
    expect(imported.length).toBe(rows);
    expect(new Set(imported.map((c) => c.email)).size).toBe(rows);
    const { rows: counted } = await services.db.query(
      `SELECT count(*)::int AS n FROM contacts WHERE email_lower LIKE '%@resume.example.org'`,
    );
    expect(counted[0].n).toBe(rows);
  });

  it('updates a thousand existing contacts in a few dozen statements, never more in flight than the pool holds', async () => {
    const services = svc.postline.services;
    const meta = { orgId: orgs.acme.orgId, mode: 'live' as const, actor: 'test' };
    const [first, second] = await Promise.all(
      ['Before', 'Again'].map(async (name) => (await orgs.acme.live.post('/v1/audiences', { name })).body.id),
    );
    const rows = (importId: string, plan: string) =>
      Array.from({ length: IMPORT_BATCH_ROWS }, (_, i) => ({
        contactId: importedContactId(importId, i),
        line: i + 2,
        email: `u${i}@again.example.org`,
        properties: { plan },
      }));
    const o = { maxProperties: 50 };
    expect(
      await importContacts(services, meta, rows('imp_again1', 'free'), { ...o, audienceId: first }),
    ).toEqual({
      created: IMPORT_BATCH_ROWS,
      updated: 0,
      skipped: [],
    });
    // Every statement the service sends, and how many are in flight at once (the pool holds 20 connections).
    const query = services.db.query;
    let inFlight = 0;
    let most = 0;
    let sent = 0;
    services.db.query = (async (...args: Parameters<typeof query>) => {
      sent++;
      most = Math.max(most, ++inFlight);
      try {
        return await query.apply(services.db, args);
      } finally {
        inFlight--;
      }
    }) as typeof query;
    try {
      expect(
        await importContacts(services, meta, rows('imp_again2', 'pro'), { ...o, audienceId: second }),
      ).toEqual({ created: 0, updated: IMPORT_BATCH_ROWS, skipped: [] });
    } finally {
      services.db.query = query;
    }
    expect(most).toBeLessThanOrEqual(20);
    // The rows' reads, appends and personal data share statements: none is a row's own (15 on 2026-12-01).
    expect(sent).toBeLessThan(50);
    // The newest committed event: the head readers see now may lag it while another database's transaction runs.
    await services.readYourWrites.waitFor(
      ['contacts'],
      await services.store.headPosition({ committed: true }),
    );
    const again = await members(second);
    expect(again.length).toBe(IMPORT_BATCH_ROWS);
    expect(again.every((c) => c.properties.plan === 'pro' && c.audience_ids.length === 2)).toBe(true);
  });

  it('skips a row that would give its existing contact more properties than the limit, and merges the others', async () => {
    const services = svc.postline.services;
    const meta = { orgId: orgs.acme.orgId, mode: 'live' as const, actor: 'test' };
    const audienceId = (await orgs.acme.live.post('/v1/audiences', { name: 'Limited' })).body.id;
    const row = (importId: string, email: string, properties: Record<string, string>) => ({
      contactId: importedContactId(importId, 0),
      line: 2,
      email,
      properties,
    });
    const o = { audienceId: null, maxProperties: 2 };
    for (const email of ['full@limit.example.org', 'room@limit.example.org'])
      await importContacts(services, meta, [row(`imp_${email.slice(0, 4)}`, email, { plan: 'free' })], o);
    const again = [
      { ...row('imp_full2', 'full@limit.example.org', { city: 'Oslo', since: '2020' }), line: 2 },
      { ...row('imp_room2', 'room@limit.example.org', { plan: 'pro', city: 'Rome' }), line: 3 },
    ];
    expect(await importContacts(services, meta, again, { ...o, audienceId })).toEqual({
      created: 0,
      updated: 1,
      skipped: [{ line: 2, reason: 'properties: the existing contact would have more than 2' }],
    });
    await services.readYourWrites.waitFor(
      ['contacts'],
      await services.store.headPosition({ committed: true }),
    );
    const [room] = await members(audienceId);
    expect(room).toMatchObject({
      email: 'room@limit.example.org',
      properties: { plan: 'pro', city: 'Rome' },
    });
    const full = await orgs.acme.live.get(`/v1/contacts/${importedContactId('imp_full', 0)}`);
    expect(full.body).toMatchObject({ properties: { plan: 'free' }, audience_ids: [] });
  });

  it('has the contacts’ tables analyzed after an import of a thousand rows or more, not after a smaller one', async () => {
    const db = svc.postline.services.db;
    /** When `contacts` and `contact_audiences` were last analyzed by a command (not autovacuum). */
    const lastAnalyzed = async (): Promise<(string | null)[]> => {
      const { rows } = await db.query(
        `SELECT last_analyze::text AS at FROM pg_stat_user_tables
         WHERE relname IN ('contacts', 'contact_audiences') ORDER BY relname`,
      );
      return rows.map((r) => r.at);
    };
    const importOf = async (rows: number, prefix: string) => {
      const emails = Array.from({ length: rows }, (_, i) => `${prefix}${i}@analyzed.example.org`);
      const started = await upload(['email', ...emails].join('\n'));
      expect(started.status, JSON.stringify(started.body)).toBe(202);
      await work(started.body.id);
      expect((await job(started.body.id)).body).toMatchObject({ status: 'completed', rows_created: rows });
    };
    const before = await lastAnalyzed();
    await importOf(ANALYZE_AFTER_ROWS - 1, 'small');
    expect(await lastAnalyzed()).toEqual(before);
    await importOf(ANALYZE_AFTER_ROWS, 'large');
    await expect
      .poll(async () => (await lastAnalyzed()).map((at, i) => at !== null && at !== before[i]))
      .toEqual([true, true]);
  });
});
