import { describe, expect, it } from 'vitest';
import { expectHiddenFromOutsiders, expectNewestFirstThenDeleted } from '../support/resources.ts';
import { useTwoOrgs } from '../support/service.ts';

const { orgs } = useTwoOrgs();

describe('audiences', () => {
  it('create, get, list, rename, delete', async () => {
    const created = await orgs.acme.live.post('/v1/audiences', { name: 'Customers' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      object: 'audience',
      id: expect.stringMatching(/^aud_[0-9a-z]+$/),
      name: 'Customers',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const id = created.body.id;
    // One audience read alone says how many contacts it has.
    expect((await orgs.acme.live.get(`/v1/audiences/${id}`)).body).toEqual({ ...created.body, contacts: 0 });
    for (const email of ['a@example.org', 'b@example.org'])
      await orgs.acme.live.post('/v1/contacts', { email, audience_ids: [id] });
    await orgs.acme.live.post('/v1/contacts', { email: 'elsewhere@example.org' });
    expect((await orgs.acme.live.get(`/v1/audiences/${id}`)).body.contacts).toBe(2);
    const renamed = await orgs.acme.live.patch(`/v1/audiences/${id}`, { name: 'Clients' });
    expect(renamed.body).toMatchObject({ id, name: 'Clients' });

    const second = await orgs.acme.live.post('/v1/audiences', { name: 'Prospects' });
    await expectNewestFirstThenDeleted(orgs.acme.live, '/v1/audiences', id, second.body.id);
  });

  it('keeps organizations and modes apart', async () => {
    const a = await orgs.acme.live.post('/v1/audiences', { name: 'Mine' });
    await expectHiddenFromOutsiders(orgs, `/v1/audiences/${a.body.id}`, { name: 'Theirs' });
  });

  it.each([[{}], [{ name: '' }], [{ name: 'x'.repeat(101) }], [{ name: 'ok', extra: true }]])(
    'refuses %j with 422',
    async (body) => {
      const r = await orgs.acme.live.post('/v1/audiences', body);
      expect([r.status, r.body.error.code]).toEqual([422, 'validation_error']);
    },
  );

  it('answers 404 for unknown and malformed ids', async () => {
    expect((await orgs.acme.live.get('/v1/audiences/aud_01unknown')).body.error.code).toBe('not_found');
    expect((await orgs.acme.live.delete('/v1/audiences/nope')).status).toBe(404);
  });
});
