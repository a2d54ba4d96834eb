import { beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import type { LookUps } from '../../platform/services.ts';
import { BroadcastExpansionProcess } from '../../processes/broadcasts/broadcast-expansion.process.ts';
import type { ApiClient } from '../support/service.ts';
import { useTwoOrgs } from '../support/service.ts';

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
  const link = /<([^>]+)>/.exec(sent.headers['List-Unsubscribe'])![1];
  return { contactId, url: link.replace(/^http:\/\/[^/]+/, svc.baseUrl) };
}

const post = (url: string, body: string) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });

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
    await expectGonePage(await post(url, 'action=preferences'), 'dana', 'example.org');
    await expectGonePage(await post(url, 'List-Unsubscribe=One-Click'), 'dana', 'example.org');
    // A form that is neither is still not understood.
    expect((await post(url, 'hello')).status).toBe(400);
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
      const saving = post(url, `action=preferences&topic=${topic}`);
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
