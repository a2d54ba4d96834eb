import { describe, expect, it } from 'vitest';
import { expectHiddenFromOutsiders, expectNewestFirstThenDeleted, outsiders } from '../support/resources.ts';
import { useTwoOrgs } from '../support/service.ts';

const { orgs } = useTwoOrgs();

describe('topics', () => {
  it('create, get, list, update, delete', async () => {
    const created = await orgs.acme.live.post('/v1/topics', {
      name: 'Product news',
      default_subscription: 'opt_in',
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      object: 'topic',
      id: expect.stringMatching(/^top_[0-9a-z]+$/),
      name: 'Product news',
      description: null,
      default_subscription: 'opt_in',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const id = created.body.id;
    expect((await orgs.acme.live.get(`/v1/topics/${id}`)).body).toEqual(created.body);

    const updated = await orgs.acme.live.patch(`/v1/topics/${id}`, { description: 'Once a month' });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ id, name: 'Product news', description: 'Once a month' });

    const second = await orgs.acme.live.post('/v1/topics', {
      name: 'Offers',
      default_subscription: 'opt_out',
    });
    await expectNewestFirstThenDeleted(orgs.acme.live, '/v1/topics', id, second.body.id);
  });

  it('keeps organizations and modes apart', async () => {
    const t = await orgs.acme.live.post('/v1/topics', { name: 'Mine', default_subscription: 'opt_in' });
    await expectHiddenFromOutsiders(orgs, `/v1/topics/${t.body.id}`, { name: 'Theirs' });
    for (const client of outsiders(orgs))
      expect((await client.get('/v1/topics')).body.data.map((x: any) => x.id)).not.toContain(t.body.id);
  });

  it.each([
    [{ default_subscription: 'opt_in' }, 'name'],
    [{ name: ' ', default_subscription: 'opt_in' }, 'name'],
    [{ name: 'x'.repeat(101), default_subscription: 'opt_in' }, 'name'],
    [{ name: 'News' }, 'default_subscription'],
    [{ name: 'News', default_subscription: 'sometimes' }, 'default_subscription'],
    [{ name: 'News', default_subscription: 'opt_in', colour: 'red' }, 'colour'],
  ])('refuses %j with 422 naming %s', async (body, field) => {
    const r = await orgs.acme.live.post('/v1/topics', body);
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe('validation_error');
    expect(r.body.error.message).toContain(field);
  });

  it('refuses a change of the default subscription and an unknown id', async () => {
    const t = await orgs.acme.live.post('/v1/topics', { name: 'Fixed', default_subscription: 'opt_in' });
    const r = await orgs.acme.live.patch(`/v1/topics/${t.body.id}`, { default_subscription: 'opt_out' });
    expect([r.status, r.body.error.code]).toEqual([422, 'validation_error']);
    expect((await orgs.acme.live.get('/v1/topics/top_01unknown')).body.error.code).toBe('not_found');
    expect((await orgs.acme.live.patch('/v1/topics/not-an-id', { name: 'x' })).status).toBe(404);
  });

  it('takes its id repeated in a change’s body, as Resend’s SDK sends it, and refuses another', async () => {
    const t = await orgs.acme.live.post('/v1/topics', { name: 'Repeated', default_subscription: 'opt_in' });
    const same = await orgs.acme.live.patch(`/v1/topics/${t.body.id}`, { id: t.body.id, name: 'Again' });
    expect(same.body).toMatchObject({ id: t.body.id, name: 'Again' });
    const other = await orgs.acme.live.patch(`/v1/topics/${t.body.id}`, { id: 'top_01other', name: 'No' });
    expect([other.status, other.body.error.message]).toEqual([422, '`id`: must be the topic id of the path']);
    expect((await orgs.acme.live.get(`/v1/topics/${t.body.id}`)).body.name).toBe('Again');
  });
});
