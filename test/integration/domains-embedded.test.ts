import { expect, it } from 'vitest';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain } from '../support/domains.ts';

// `npm start` runs on embedded PGlite: the domain life cycle must work there too, not only on PostgreSQL.
const { svc, dns } = useDnsService({ kind: 'pglite' });

it('adds, verifies, lists, updates and deletes a domain on PGlite', async () => {
  const org = await svc.createOrg('free');
  const d = await addVerifiedDomain(org.live, dns, 'embedded.example.com');
  expect((await org.live.get('/v1/domains')).body.data.map((x: any) => x.id)).toEqual([d.id]);
  const patched = await org.live.patch(`/v1/domains/${d.id}`, {
    impressum: { company_name: 'Acme', address: 'Street 1', country: 'DE', email: 'a@acme.example' },
  });
  expect(patched.body.impressum.company_name).toBe('Acme');
  expect((await org.live.delete(`/v1/domains/${d.id}`)).body).toEqual({ id: d.id, deleted: true });
  expect((await org.live.get(`/v1/domains/${d.id}`)).status).toBe(404);
});
