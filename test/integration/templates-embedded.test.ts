import { beforeAll, expect, it } from 'vitest';
import { type TestOrg, useTestService } from '../support/service.ts';

// `npm start` runs on PGlite: the same SQL must work there (array parameters, jsonb, counts).
let org: TestOrg;
const svc = useTestService({ kind: 'pglite' });
beforeAll(async () => {
  org = await svc.createOrg('free');
});

it('runs templates and suppressions on the embedded database', async () => {
  const t = await org.live.post('/v1/templates', {
    name: 'T',
    subject: 'Hi {{n}}',
    text: 'Hi {{n}}',
    variables: [{ name: 'n', type: 'string', required: true }],
  });
  expect(t.status).toBe(201);
  await org.live.post(`/v1/templates/${t.body.id}/publish`);
  await org.live.patch(`/v1/templates/${t.body.id}`, { text: 'Hello {{n}}' });
  const list = await org.live.get('/v1/templates');
  expect(list.body.data[0]).toMatchObject({
    id: t.body.id,
    draft: { version: 2 },
    published: { version: 1 },
  });
  const r = await org.live.post('/v1/templates/render', {
    template_id: t.body.id,
    template_data: { n: 'A' },
  });
  expect(r.body).toMatchObject({ subject: 'Hi A', text: 'Hi A', html: null });
  const s = await org.live.post('/v1/suppressions', { email: 'a@example.com' });
  expect(s.status).toBe(201);
  expect((await org.live.get('/v1/suppressions?reason=manual')).body.data.map((x: any) => x.id)).toEqual([
    s.body.id,
  ]);
});
