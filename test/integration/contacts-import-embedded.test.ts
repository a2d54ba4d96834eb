import { beforeAll, expect, it } from 'vitest';
import { ContactImportProcess } from '../../processes/contact-import/contact-import.process.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

// `npm start` runs on PGlite: the import's SQL must work there (array parameters, json_to_recordset, RETURNING).
let org: TestOrg;
const svc = useTestService({ kind: 'pglite' });
beforeAll(async () => {
  org = await svc.createOrg('free');
});

it('imports contacts on the embedded database, an existing one updated', async () => {
  const audience = (await org.live.post('/v1/audiences', { name: 'Embedded' })).body.id;
  await org.live.post('/v1/contacts', { email: 'old@example.org', properties: { since: '2020' } });
  const started = await org.live.post(
    `/v1/audiences/${audience}/contacts/import`,
    'email,first_name,plan\nnew@example.org,New,pro\nold@example.org,Old,free\nbad,,\n',
    { 'content-type': 'text/csv' },
  );
  expect(started.status).toBe(202);
  await new ContactImportProcess(svc.postline.services).runOnce();
  await expect
    .poll(
      async () => (await org.live.get(`/v1/audiences/${audience}/contacts/import/${started.body.id}`)).body,
    )
    .toMatchObject({
      status: 'completed',
      rows_total: 3,
      rows_created: 1,
      rows_updated: 1,
      rows_skipped: 1,
      invalid_rows: [{ line: 4, reason: 'email: must be a valid email address' }],
    });
  const members = (await org.live.get(`/v1/contacts?audience_id=${audience}`)).body.data;
  expect(Object.fromEntries(members.map((c: any) => [c.email, c.properties]))).toEqual({
    'new@example.org': { plan: 'pro' },
    'old@example.org': { plan: 'free', since: '2020' },
  });
});
