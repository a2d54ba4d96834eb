import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import type { LookUps } from '../../platform/services.ts';
import { BroadcastExpansionProcess } from '../../processes/broadcasts/broadcast-expansion.process.ts';
import type { ApiClient } from '../support/service.ts';
import { useTwoOrgs } from '../support/service.ts';
import { oneClick, postForm, unsubscribeLink } from '../support/unsubscribe-links.ts';

const clock = new ManualClock('2026-09-01T08:00:00Z');
const { svc, orgs } = useTwoOrgs(() => ({ clock }));
let expansion: BroadcastExpansionProcess;
let client: ApiClient;
beforeAll(() => {
  expansion = new BroadcastExpansionProcess(svc.postline.services);
  client = orgs.acme.test;
});

const ok = <T extends { status: number; body: any }>(r: T, status = 200) => {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
};
const settled = async (...names: string[]) => {
  const { store, readYourWrites } = svc.postline.services;
  await readYourWrites.waitFor(names, await store.headPosition({ committed: true }));
};

/** A broadcast sent to one new contact (with a topic in the organization); its email's unsubscribe URL. */
async function sentTo(email: string) {
  const aud = ok(await client.post('/v1/audiences', { name: 'Readers' }), 201).id;
  const contactId = ok(
    await client.post('/v1/contacts', { email, first_name: 'Uma', last_name: 'Quill', audience_ids: [aud] }),
    201,
  ).id;
  const b = ok(
    await client.post('/v1/broadcasts', {
      name: 'News',
      audience_id: aud,
      from: 'Acme <news@acme.test>',
      subject: 'Hello',
      text: 'Hi',
    }),
    201,
  );
  ok(await client.post(`/v1/broadcasts/${b.id}/send`, {}));
  await expansion.runOnce();
  await settled('emails');
  const { rows } = await svc.postline.services.db.query<{ id: string }>(
    'SELECT id FROM emails WHERE broadcast_id = $1',
    [b.id],
  );
  const sent = ok(await client.get(`/v1/emails/${rows[0].id}`));
  return { contactId, url: unsubscribeLink(sent.headers, svc.baseUrl) };
}

/** What a deleted contact's link answers, whatever was asked: a friendly page without personal data. */
async function expectGonePage(r: Response, ...personal: string[]) {
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
  const html = await r.text();
  expect(html).toContain('You are unsubscribed');
  expect(html).toContain('You will receive no more emails from this list.');
  expect(html).not.toContain('<form');
  for (const p of personal) expect(html.toLowerCase()).not.toContain(p.toLowerCase());
}

describe('the unsubscribe page shows no more than needed', () => {
  it('shows the address the email was sent to, masked, never the contact’s address now', async () => {
    const { contactId, url } = await sentTo('uma.quill@example.org');
    const before = await (await fetch(url)).text();
    expect(before).toContain('u***@example.org');
    expect(before).not.toContain('uma.quill@');
    expect(before).not.toContain('Quill');

    ok(await client.patch(`/v1/contacts/${contactId}`, { email: 'secret.new@example.net' }));
    const after = await fetch(url);
    expect(after.status).toBe(200);
    const html = await after.text();
    expect(html).toContain('u***@example.org');
    expect(html).not.toContain('secret');
    expect(html).not.toContain('example.net');
    expect(html).toContain('<input type="hidden" name="List-Unsubscribe" value="One-Click">');
  });
});

describe('a deleted contact’s link', () => {
  it('answers every request with the page that says nothing more is sent', async () => {
    ok(await client.post('/v1/topics', { name: 'Tips', default_subscription: 'opt_in' }), 201);
    const { contactId, url } = await sentTo('dana.gone@example.org');
    ok(await client.delete(`/v1/contacts/${contactId}`));
    await expectGonePage(await fetch(url), 'dana', 'example.org');
    await expectGonePage(await postForm(url, 'action=preferences'), 'dana', 'example.org');
    await expectGonePage(await postForm(url, 'List-Unsubscribe=One-Click'), 'dana', 'example.org');
    // A form that is neither is still not understood.
    expect((await postForm(url, 'hello')).status).toBe(400);
  });

  it('answers the same when the contact is deleted while a preferences form is being saved', async () => {
    const topic = ok(
      await client.post('/v1/topics', { name: 'Deals', default_subscription: 'opt_out' }),
      201,
    ).id;
    const { contactId, url } = await sentTo('raced@example.org');
    // The page's look-ups are done, the write not yet: the contact is deleted through the API in between.
    const lookUps: LookUps = svc.postline.services.lookUps;
    const contactTopics = lookUps.contactTopics;
    let reach!: () => void;
    let release!: () => void;
    const reached = new Promise<void>((r) => {
      reach = r;
    });
    const gate = new Promise<void>((r) => {
      release = r;
    });
    lookUps.contactTopics = async (...args) => {
      const topics = await contactTopics(...args);
      reach();
      await gate;
      return topics;
    };
    try {
      const saving = postForm(url, `action=preferences&topic=${topic}`);
      await reached;
      ok(await client.delete(`/v1/contacts/${contactId}`));
      release();
      // Before: a 404 whose body was the API's JSON error (naming the contact's id), sent as text/html.
      await expectGonePage(await saving, 'raced', 'con_');
    } finally {
      lookUps.contactTopics = contactTopics;
      release();
    }
  });
});

describe('the link of a send about a topic', () => {
  /** A send about the topic to `to`; the link of its List-Unsubscribe, on this service's port. */
  async function linkOf(to: string, topic: string) {
    const sent = ok(
      await client.post('/v1/emails', {
        from: 'news@acme.test',
        to,
        subject: 'S',
        text: 'T',
        topic_id: topic,
      }),
    );
    await settled('emails');
    const { headers } = ok(await client.get(`/v1/emails/${sent.id}`));
    return unsubscribeLink(headers, svc.baseUrl);
  }
  const subscription = async (contactId: string, topic: string) => {
    await settled('contacts');
    return ok(await client.get(`/v1/contacts/${contactId}/topics`)).data.find((t: any) => t.id === topic)
      .subscription;
  };
  const contactOf = async (email: string) => {
    await settled('contacts');
    return ok(await client.get(`/v1/contacts?email=${email}`)).data[0];
  };

  it('names an address: one that is no contact gets the button alone, and becomes a contact out of the topic', async () => {
    const topic = ok(
      await client.post('/v1/topics', { name: 'Release notes', default_subscription: 'opt_in' }),
      201,
    ).id;
    const url = await linkOf('Nia <nia@example.org>', topic);
    const page = await (await fetch(url)).text();
    expect(page).toContain('n***@example.org');
    expect(page).toContain('Stop receiving emails about “Release notes”?');
    expect(page).not.toContain('Or choose what you receive');
    // Preferences are a contact's: none to save.
    expect((await postForm(url, `action=preferences&topic=${topic}`)).status).toBe(400);
    expect(await contactOf('nia@example.org')).toBeUndefined();

    expect((await postForm(url, 'List-Unsubscribe=One-Click')).status).toBe(200);
    const nia = await contactOf('nia@example.org');
    expect(nia).toMatchObject({ email: 'nia@example.org', unsubscribed: false, audience_ids: [] });
    expect(await subscription(nia.id, topic)).toBe('opt_out');
    // Once a contact, the page shows its preferences, and saves them.
    expect(await (await fetch(url)).text()).toContain('Or choose what you receive');
    expect((await postForm(url, `action=preferences&topic=${topic}`)).status).toBe(200);
    expect(await subscription(nia.id, topic)).toBe('opt_in');
  });

  it('unsubscribes the contact that has the address when the link is followed, whoever it was when sent', async () => {
    const topic = ok(
      await client.post('/v1/topics', { name: 'Digest', default_subscription: 'opt_in' }),
      201,
    ).id;
    const url = await linkOf('omar@example.org', topic);
    const omar = ok(await client.post('/v1/contacts', { email: 'Omar@Example.org' }), 201).id;
    expect((await postForm(url, 'List-Unsubscribe=One-Click')).status).toBe(200);
    expect(await contactOf('omar@example.org')).toMatchObject({ id: omar });
    expect(await subscription(omar, topic)).toBe('opt_out');
  });

  it('is made for no other email: a token for an email about no topic, or to two addresses, finds nothing', async () => {
    const topic = ok(
      await client.post('/v1/topics', { name: 'Other', default_subscription: 'opt_in' }),
      201,
    ).id;
    const plain = ok(
      await client.post('/v1/emails', { from: 'a@acme.test', to: 'p@example.org', subject: 'S', text: 'T' }),
    );
    const two = ok(
      await client.post('/v1/emails', {
        from: 'a@acme.test',
        to: ['p@example.org', 'q@example.org'],
        subject: 'S',
        text: 'T',
        topic_id: topic,
      }),
    );
    await settled('emails');
    expect(ok(await client.get(`/v1/emails/${two.id}`)).headers).toEqual({});
    for (const id of [plain.id, two.id]) {
      const forged = `${svc.baseUrl}/unsubscribe/${svc.postline.services.tokens.unsubscribe.sign(id)}`;
      expect((await fetch(forged)).status).toBe(404);
      expect((await postForm(forged, 'List-Unsubscribe=One-Click')).status).toBe(404);
    }
  });
});

describe('a hostile unsubscribe token', () => {
  /** The link's own page, or the rule every path is held to first (app.ts): JSON in the documented shape. */
  const PAGE = { status: 404, type: 'text/html; charset=utf-8', text: 'This link does not work' };
  const json = (status: number, code: string) => ({
    status,
    type: 'application/json; charset=utf-8',
    text: code,
  });

  it.each([
    ['a NUL (no stored text holds one: nothing there)', 'em_01%00-abc', json(404, 'route_not_found')],
    ['a line break', 'em_01%0D%0AX-Injected:%20yes-abc', PAGE],
    ['an encoded lone surrogate (not UTF-8)', 'em_01%ED%A0%80-abc', json(400, 'malformed_request')],
    ['a path', '..%2F..%2Fadmin', PAGE],
    ['10 KB', `em_${'a'.repeat(10_000)}-abc`, PAGE],
  ])('with %s: the same answer to GET and to the one-click POST', async (_, token, expected) => {
    const url = `${svc.baseUrl}/unsubscribe/${token}`;
    for (const r of [await fetch(url), await oneClick(url)]) {
      expect(r.status).toBe(expected.status);
      expect(r.headers.get('content-type')).toBe(expected.type);
      expect(r.headers.get('x-injected')).toBeNull();
      expect(await r.text()).toContain(expected.text);
    }
  });
});
