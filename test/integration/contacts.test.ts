import { beforeAll, describe, expect, it } from 'vitest';
import { openPersonalData } from '../../platform/personal-data.ts';
import { PATIENCE } from '../support/patience.ts';
import { expectHiddenFromOutsiders, outsiders } from '../support/resources.ts';
import { useTwoOrgs } from '../support/service.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

let receiver: WebhookReceiver;

const { svc, orgs } = useTwoOrgs(() => ({
  processes: true,
  env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' },
}));
beforeAll(async () => {
  receiver = await startWebhookReceiver();
  await receiver.subscribe(orgs.acme.live, [
    'contact.created',
    'contact.updated',
    'contact.deleted',
    'contact.unsubscribed',
  ]);
  return () => receiver.close();
});

const contact = (email: string, extra: Record<string, unknown> = {}) =>
  orgs.acme.live.post('/v1/contacts', { email, ...extra });

describe('contacts', () => {
  it('create, get, update, list, delete, with every field', async () => {
    const created = await contact('Ann.Lee@Example.org', {
      first_name: 'Ann',
      last_name: 'Lee',
      properties: { plan: 'pro', seats: 3, beta: true },
      consent_given_at: '2026-11-01T10:00:00Z',
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      object: 'contact',
      id: expect.stringMatching(/^con_[0-9a-z]+$/),
      email: 'Ann.Lee@Example.org',
      first_name: 'Ann',
      last_name: 'Lee',
      unsubscribed: false,
      properties: { plan: 'pro', seats: 3, beta: true },
      consent_given_at: '2026-11-01T10:00:00.000Z',
      audience_ids: [],
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const id = created.body.id;
    expect((await orgs.acme.live.get(`/v1/contacts/${id}`)).body).toEqual(created.body);

    const updated = await orgs.acme.live.patch(`/v1/contacts/${id}`, { first_name: 'Anna', last_name: null });
    expect(updated.body).toMatchObject({ first_name: 'Anna', last_name: null, email: 'Ann.Lee@Example.org' });
    // A change to what is there already appends nothing.
    const history = () => svc.postline.services.store.readStream(`contact-${id}`);
    const before = (await history()).length;
    expect(
      (await orgs.acme.live.patch(`/v1/contacts/${id}`, { first_name: 'Anna', unsubscribed: false })).status,
    ).toBe(200);
    expect((await history()).length).toBe(before);
    const byEmail = await orgs.acme.live.get('/v1/contacts?email=ann.lee@example.ORG');
    expect(byEmail.body.data.map((c: any) => c.id)).toEqual([id]);

    expect((await orgs.acme.live.delete(`/v1/contacts/${id}`)).body).toEqual({ id, deleted: true });
    expect((await orgs.acme.live.get(`/v1/contacts/${id}`)).status).toBe(404);
    expect((await orgs.acme.live.delete(`/v1/contacts/${id}`)).status).toBe(404);
  });

  it('keeps an address to one contact, in any letter case, also across a change of address', async () => {
    const first = await contact('dup@example.org');
    const again = await contact('DUP@example.org');
    expect([again.status, again.body.error.code]).toEqual([409, 'contact_exists']);
    const second = await contact('moving@example.org');
    const taken = await orgs.acme.live.patch(`/v1/contacts/${second.body.id}`, { email: 'Dup@Example.org' });
    expect([taken.status, taken.body.error.code]).toEqual([409, 'contact_exists']);
    // A change of address frees the old one.
    expect(
      (await orgs.acme.live.patch(`/v1/contacts/${first.body.id}`, { email: 'dup2@example.org' })).status,
    ).toBe(200);
    expect((await contact('dup@example.org')).status).toBe(201);
    // So does a deletion; another organization or mode may have the address all along.
    await orgs.acme.live.delete(`/v1/contacts/${first.body.id}`);
    expect((await contact('dup2@example.org')).status).toBe(201);
    expect((await orgs.other.live.post('/v1/contacts', { email: 'dup@example.org' })).status).toBe(201);
    expect((await orgs.acme.test.post('/v1/contacts', { email: 'dup@example.org' })).status).toBe(201);
  });

  it('forgets a deleted contact: its row is gone and its events can no longer be read', async () => {
    const created = await contact('forget.me@example.org', { first_name: 'Forget' });
    const id = created.body.id;
    const { store, db } = svc.postline.services;
    const [event] = await store.readStream(`contact-${id}`);
    const sealed = (event.data as { personal: string }).personal;
    expect(JSON.stringify(event.data)).not.toContain('forget.me');
    expect(await openPersonalData(db, id, sealed)).toMatchObject({ email: 'forget.me@example.org' });
    await orgs.acme.live.delete(`/v1/contacts/${id}`);
    expect(await openPersonalData(db, id, sealed)).toBeNull();
    const { rows } = await db.query('SELECT count(*)::int AS n FROM contacts WHERE id = $1', [id]);
    expect(rows[0].n).toBe(0);
  });

  it('joins and leaves audiences; lists by audience and by unsubscribed', async () => {
    const audience = (await orgs.acme.live.post('/v1/audiences', { name: 'Customers' })).body.id;
    const a = await contact('member@example.org', { audience_ids: [audience] });
    expect(a.body.audience_ids).toEqual([audience]);
    const b = await contact('joins-later@example.org', { unsubscribed: true });
    const joined = await orgs.acme.live.put(`/v1/audiences/${audience}/contacts/${b.body.id}`);
    expect(joined.body.audience_ids).toEqual([audience]);
    expect((await orgs.acme.live.put(`/v1/audiences/${audience}/contacts/${b.body.id}`)).status).toBe(200);
    const members = await orgs.acme.live.get(`/v1/contacts?audience_id=${audience}`);
    expect(members.body.data.map((c: any) => c.id).sort()).toEqual([a.body.id, b.body.id].sort());
    const unsubscribed = await orgs.acme.live.get(`/v1/contacts?audience_id=${audience}&unsubscribed=true`);
    expect(unsubscribed.body.data.map((c: any) => c.id)).toEqual([b.body.id]);
    const left = await orgs.acme.live.delete(`/v1/audiences/${audience}/contacts/${a.body.id}`);
    expect(left.body.audience_ids).toEqual([]);
    expect((await orgs.acme.live.put(`/v1/audiences/aud_01unknown/contacts/${a.body.id}`)).status).toBe(404);
    const unknownAudience = await contact('x@example.org', { audience_ids: ['aud_01unknown'] });
    expect([unknownAudience.status, unknownAudience.body.error.code]).toEqual([422, 'validation_error']);
  });

  it('tells webhooks of each change, without personal data', async () => {
    const created = await contact('hooked@example.org');
    const id = created.body.id;
    await orgs.acme.live.patch(`/v1/contacts/${id}`, { unsubscribed: true });
    await orgs.acme.live.delete(`/v1/contacts/${id}`);
    // Deliveries to one endpoint go out concurrently, so they may arrive in any order (docs/webhooks.md).
    await expect
      .poll(
        () =>
          receiver.received
            .filter((r) => r.payload.data?.contact_id === id)
            .map((r) => r.payload.type)
            .sort(),
        PATIENCE,
      )
      .toEqual(['contact.created', 'contact.deleted', 'contact.unsubscribed', 'contact.updated']);
    const mine = receiver.received.filter((r) => r.payload.data?.contact_id === id);
    expect(mine.every((r) => r.verifiedWith.length === 1)).toBe(true);
    expect(JSON.stringify(mine.map((r) => r.payload))).not.toContain('hooked@');
  });

  it("a contact's topics: the defaults until it chooses, its choices after, contact.unsubscribed for an opt-out", async () => {
    const news = (await orgs.acme.live.post('/v1/topics', { name: 'News', default_subscription: 'opt_in' }))
      .body.id;
    const offers = (
      await orgs.acme.live.post('/v1/topics', { name: 'Offers', default_subscription: 'opt_out' })
    ).body.id;
    const c = (await contact('reader@example.org')).body.id;
    const subscriptions = async () =>
      Object.fromEntries(
        (await orgs.acme.live.get(`/v1/contacts/${c}/topics`)).body.data
          .filter((t: any) => [news, offers].includes(t.id))
          .map((t: any) => [t.name, t.subscription]),
      );
    expect(await subscriptions()).toEqual({ News: 'opt_in', Offers: 'opt_out' });
    const changed = await orgs.acme.live.patch(`/v1/contacts/${c}/topics`, [
      { topic_id: news, subscription: 'opt_out' },
      { topic_id: offers, subscription: 'opt_in' },
    ]);
    expect(changed.status).toBe(200);
    expect(await subscriptions()).toEqual({ News: 'opt_out', Offers: 'opt_in' });
    // Unsubscribed from one topic, not from everything.
    expect((await orgs.acme.live.get(`/v1/contacts/${c}`)).body.unsubscribed).toBe(false);
    await expect
      .poll(
        () =>
          receiver
            .ofType('contact.unsubscribed')
            .filter((r) => r.payload.data.contact_id === c)
            .map((r) => r.payload.data.topic_id),
        PATIENCE,
      )
      .toEqual([news]);
    const unknown = await orgs.acme.live.patch(`/v1/contacts/${c}/topics`, [
      { topic_id: 'top_01unknown', subscription: 'opt_in' },
    ]);
    expect([unknown.status, unknown.body.error.code]).toEqual([422, 'validation_error']);
    const theirs = (
      await orgs.other.live.post('/v1/topics', { name: 'Theirs', default_subscription: 'opt_in' })
    ).body.id;
    expect(
      (await orgs.acme.live.patch(`/v1/contacts/${c}/topics`, [{ topic_id: theirs, subscription: 'opt_in' }]))
        .status,
    ).toBe(422);
    expect((await orgs.acme.live.patch(`/v1/contacts/${c}/topics`, { topic_id: news })).status).toBe(422);
    expect((await orgs.other.live.get(`/v1/contacts/${c}/topics`)).status).toBe(404);
    // Resend's SDK names the topic `id`; given beside `topic_id`, it is refused by its name.
    await orgs.acme.live.patch(`/v1/contacts/${c}/topics`, [{ id: news, subscription: 'opt_in' }]);
    expect((await subscriptions()).News).toBe('opt_in');
    const both = await orgs.acme.live.patch(`/v1/contacts/${c}/topics`, [
      { id: news, topic_id: news, subscription: 'opt_out' },
    ]);
    expect([both.status, both.body.error.message]).toEqual([
      422,
      '`[0].id`: cannot be given with `topic_id` (it is Resend’s name for it)',
    ]);
  });

  it('names a contact in its path by its address too, in any letter case: get, change, topics, audiences, delete', async () => {
    const { id } = (await contact('Named.By@Example.org', { first_name: 'Nell' })).body;
    const path = '/v1/contacts/named.by@EXAMPLE.org';
    expect((await orgs.acme.live.get(path)).body).toMatchObject({ id, first_name: 'Nell' });
    expect((await orgs.acme.live.get('/v1/contacts/named.by%40example.org')).body.id).toBe(id);
    expect((await orgs.acme.live.patch(path, { unsubscribed: true })).body).toMatchObject({
      id,
      unsubscribed: true,
    });
    expect((await orgs.acme.live.get(`${path}/topics`)).status).toBe(200);
    const audience = (await orgs.acme.live.post('/v1/audiences', { name: 'By address' })).body.id;
    const joined = await orgs.acme.live.post(`${path}/segments/${audience}`);
    expect(joined.body).toMatchObject({ id, audience_ids: [audience] });
    // Its address changed, the old one names nothing; the new one names it.
    await orgs.acme.live.patch(path, { email: 'renamed.by@example.org' });
    const gone = await orgs.acme.live.get(path);
    expect([gone.status, gone.body.error.message]).toEqual([404, 'Contact named.by@EXAMPLE.org not found']);
    expect((await orgs.acme.live.delete('/v1/contacts/renamed.by@example.org')).body).toEqual({
      id,
      deleted: true,
    });
    expect((await orgs.acme.live.get(`/v1/contacts/${id}`)).status).toBe(404);
    for (const [method, unknown] of [
      ['get', '/v1/contacts/nobody@example.org'],
      ['patch', '/v1/contacts/nobody@example.org'],
      ['delete', '/v1/contacts/nobody@example.org'],
      ['get', '/v1/contacts/nobody@example.org/topics'],
    ] as const)
      expect((await orgs.acme.live[method](unknown, {})).status, `${method} ${unknown}`).toBe(404);
    // Hostile addresses in the path: a NUL, a line break, a lone surrogate, 5,000 characters: refused, never a 500.
    for (const hostile of [
      'a%00@b.test',
      'a%0d%0a@b.test',
      'a%ED%A0%80@b.test',
      `${'a'.repeat(5000)}@b.test`,
    ])
      for (const method of ['get', 'patch', 'delete'] as const) {
        const r = await orgs.acme.live[method](`/v1/contacts/${hostile}`, {});
        expect([400, 404], `${method} ${hostile.slice(0, 20)}`).toContain(r.status);
        expect(r.body.error).toMatchObject({ type: expect.any(String), code: expect.any(String) });
      }
  });

  it('keeps organizations and modes apart', async () => {
    const c = await contact('private@example.org');
    await expectHiddenFromOutsiders(orgs, `/v1/contacts/${c.body.id}`, { first_name: 'x' });
    await expectHiddenFromOutsiders(orgs, '/v1/contacts/private@example.org', { first_name: 'x' });
    const aud = (await orgs.acme.live.post('/v1/audiences', { name: 'Private' })).body.id;
    await orgs.acme.live.put(`/v1/audiences/${aud}/contacts/${c.body.id}`);
    await expectHiddenFromOutsiders(orgs, `/v1/audiences/${aud}/contacts/${c.body.id}`, { first_name: 'x' });
    expect((await orgs.acme.live.get(`/v1/audiences/${aud}/contacts/${c.body.id}`)).body.id).toBe(c.body.id);
    for (const client of outsiders(orgs))
      expect((await client.get('/v1/contacts?email=private@example.org')).body.data).toEqual([]);
  });

  it('refuses control characters in names (line breaks, tabs), on create and on update, saying so', async () => {
    const control = 'must not contain control characters (line breaks, tabs and the like)';
    for (const body of [
      { email: 'dan@example.org', first_name: 'Dan\r\nBcc: victim@rcpt.test' },
      { email: 'dan@example.org', last_name: 'Lee\nX' },
      { email: 'dan@example.org', first_name: 'Tab\tbed' },
      { email: 'dan@example.org', first_name: 'Bell\u0007' },
      { email: 'dan@example.org', last_name: 'C1\u0085control' },
    ]) {
      const r = await orgs.acme.live.post('/v1/contacts', body);
      expect([r.status, r.body.error?.code], JSON.stringify(body)).toEqual([422, 'validation_error']);
      const field = 'first_name' in body ? 'first_name' : 'last_name';
      expect(r.body.error.message).toBe(`\`${field}\`: ${control}`);
    }
    expect((await orgs.acme.live.get('/v1/contacts?email=dan@example.org')).body.data).toEqual([]);

    // Spaces around a name are trimmed (a trailing line break included); other characters stay (U+2028 too).
    const ok = await orgs.acme.live.post('/v1/contacts', {
      email: 'dan@example.org',
      first_name: ' Dän\n',
      last_name: 'O’Brien\u2028Jr',
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    expect(ok.body).toMatchObject({ first_name: 'Dän', last_name: 'O’Brien\u2028Jr' });
    const changed = await orgs.acme.live.patch(`/v1/contacts/${ok.body.id}`, { first_name: 'Dan\rX' });
    expect([changed.status, changed.body.error?.message]).toEqual([422, `\`first_name\`: ${control}`]);
    expect((await orgs.acme.live.get(`/v1/contacts/${ok.body.id}`)).body.first_name).toBe('Dän');
  });

  it.each([
    [{}, 'email'],
    [{ email: 'not an address' }, 'email'],
    [{ email: 'a@example.org', first_name: 'x'.repeat(257) }, 'first_name'],
    [{ email: 'a@example.org', properties: { 'bad key': 1 } }, 'properties'],
    [
      { email: 'a@example.org', properties: { nested: { a: 1 } } },
      '`properties.nested`: must be a string of at most 1000 characters, a number or a boolean',
    ],
    [{ email: 'a@example.org', properties: { gone: null } }, '`properties.gone`: must be a string of'],
    [{ email: 'a@example.org', consent_given_at: 'yesterday' }, 'consent_given_at'],
    // Valid ISO 8601, but not a timestamp PostgreSQL can store.
    [{ email: 'a@example.org', consent_given_at: '2024-01-01T00:00:00+23:59' }, 'consent_given_at'],
    [{ email: 'a@example.org', consent_given_at: '0000-01-01T00:00:00Z' }, 'consent_given_at'],
    [{ email: 'a@example.org', unsubscribed: 'yes' }, 'unsubscribed'],
    [{ email: 'a@example.org', colour: 'red' }, 'colour'],
  ])('refuses %j with 422 naming %s', async (body, field) => {
    const r = await orgs.acme.live.post('/v1/contacts', body);
    expect([r.status, r.body.error.code]).toEqual([422, 'validation_error']);
    expect(r.body.error.message).toContain(field);
  });
});
