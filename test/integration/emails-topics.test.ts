import { beforeAll, describe, expect, it } from 'vitest';
import { type TestOrg, useTestService } from '../support/service.ts';

/**
 * A send about a topic (`topic_id`, Resend's field): only the recipients the topic reaches get the email, the
 * others are left out and named (docs/emails.md, "Topics"). Test keys: no domain is needed.
 */
const svc = useTestService();
let org: TestOrg;
let weekly: string;
let offers: string;

const contact = async (email: string, extra: Record<string, unknown> = {}) => {
  const r = await org.test.post('/v1/contacts', { email, ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id as string;
};
const choose = async (contactId: string, topicId: string, subscription: 'opt_in' | 'opt_out') =>
  expect(
    (await org.test.patch(`/v1/contacts/${contactId}/topics`, [{ topic_id: topicId, subscription }])).status,
  ).toBe(200);
const topic = async (name: string, default_subscription: 'opt_in' | 'opt_out') =>
  (await org.test.post('/v1/topics', { name, default_subscription })).body.id as string;

const send = (over: Record<string, unknown>) =>
  org.test.post('/v1/emails', { from: 'news@acme.test', subject: 'This week', text: 'News', ...over });

beforeAll(async () => {
  org = await svc.createOrg('pro');
  weekly = await topic('Weekly', 'opt_in');
  offers = await topic('Offers', 'opt_out');
  const ann = await contact('ann@example.org');
  const bob = await contact('bob@example.org');
  await contact('cat@example.org');
  const dan = await contact('dan@example.org');
  await contact('eve@example.org', { unsubscribed: true });
  await choose(ann, weekly, 'opt_out');
  await choose(bob, weekly, 'opt_in');
  await choose(bob, offers, 'opt_in');
  await choose(dan, offers, 'opt_out');
});

const everyone = ['ann@example.org', 'Bob <BOB@example.org>', 'cat@example.org', 'dan@example.org'];

describe('POST /v1/emails with topic_id', () => {
  it('an opt-in topic reaches every address but those that opted out of it or of everything', async () => {
    const r = await send({
      to: everyone,
      cc: ['eve@example.org'],
      bcc: ['zed@example.org'],
      topic_id: weekly,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^em_/),
      status: 'queued',
      suppressed_recipients: [],
      unsubscribed_recipients: ['ann@example.org', 'eve@example.org'],
    });
    const got = (await org.test.get(`/v1/emails/${r.body.id}`)).body;
    expect(got).toMatchObject({
      to: ['Bob <BOB@example.org>', 'cat@example.org', 'dan@example.org'],
      cc: [],
      bcc: ['zed@example.org'],
      topic_id: weekly,
      unsubscribed_recipients: ['ann@example.org', 'eve@example.org'],
    });
    expect(got.recipients.map((x: any) => x.email).sort()).toEqual([
      'bob@example.org',
      'cat@example.org',
      'dan@example.org',
      'zed@example.org',
    ]);
  });

  it('an opt-out topic reaches only the contacts that opted in, not an address that is no contact', async () => {
    const r = await send({ to: [...everyone, 'zed@example.org'], topic_id: offers });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.unsubscribed_recipients).toEqual([
      'ann@example.org',
      'cat@example.org',
      'dan@example.org',
      'zed@example.org',
    ]);
    expect((await org.test.get(`/v1/emails/${r.body.id}`)).body.to).toEqual(['Bob <BOB@example.org>']);
  });

  it('refuses a send the topic reaches no one of (422 all_recipients_unsubscribed) and records nothing', async () => {
    const before = (await org.test.get('/v1/emails?limit=100')).body.data.length;
    const r = await send({ to: ['ANN@example.org', 'eve@example.org'], topic_id: weekly });
    expect(r.status).toBe(422);
    expect(r.body.error).toEqual({
      type: 'validation_error',
      code: 'all_recipients_unsubscribed',
      message: `No recipient receives emails about topic ${weekly}: ann@example.org, eve@example.org.`,
    });
    expect((await org.test.get('/v1/emails?limit=100')).body.data.length).toBe(before);
  });

  it('applies the suppression list first: each address left out is named once, by its first reason', async () => {
    const own = await svc.createOrg('pro');
    const news = (await own.test.post('/v1/topics', { name: 'News', default_subscription: 'opt_out' })).body
      .id;
    await own.test.post('/v1/suppressions', { email: 'gone@example.org' });
    const post = (to: string[]) =>
      own.test.post('/v1/emails', { from: 'n@acme.test', to, subject: 's', text: 't', topic_id: news });
    const both = await post(['gone@example.org', 'nobody@example.org']);
    expect([both.status, both.body.error.code]).toEqual([422, 'all_recipients_unsubscribed']);
    expect(both.body.error.message).toBe(
      `No recipient receives emails about topic ${news}: nobody@example.org; on the suppression list: gone@example.org.`,
    );
    const suppressedOnly = await post(['gone@example.org']);
    expect([suppressedOnly.status, suppressedOnly.body.error.code]).toEqual([
      422,
      'all_recipients_suppressed',
    ]);
  });

  it('refuses a topic the organization does not have, and a malformed id, naming topic_id', async () => {
    const theirs = await svc.createOrg('pro');
    const foreign = (await theirs.test.post('/v1/topics', { name: 'Theirs', default_subscription: 'opt_in' }))
      .body.id;
    const live = (await org.live.post('/v1/topics', { name: 'Live only', default_subscription: 'opt_in' }))
      .body.id;
    const gone = await topic('Gone', 'opt_in');
    expect((await org.test.delete(`/v1/topics/${gone}`)).status).toBe(200);
    for (const id of [foreign, live, gone]) {
      const r = await send({ to: ['bob@example.org'], topic_id: id });
      expect(r.status).toBe(422);
      expect(r.body.error).toMatchObject({
        code: 'validation_error',
        message: `\`topic_id\`: topic ${id} not found`,
      });
    }
    const malformed = await send({ to: ['bob@example.org'], topic_id: 'weekly' });
    expect(malformed.status).toBe(422);
    expect(malformed.body.error.message).toBe('`topic_id`: must be a topic id (top_…)');
    // Hostile values: a NUL, a lone surrogate, a long string, a nested object.
    for (const hostile of ['top_1\u0000', '\ud800', `top_${'x'.repeat(100_000)}`, { a: { b: { c: 1 } } }]) {
      const r = await send({ to: ['bob@example.org'], topic_id: hostile });
      expect(r.status).toBe(422);
      expect(r.body.error.message).toMatch(/^`topic_id`: /);
    }
  });

  it('without a topic (or with topic_id null) sends to everyone and says nothing of topics', async () => {
    for (const over of [{}, { topic_id: null }]) {
      const r = await send({ to: ['ann@example.org', 'eve@example.org'], ...over });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ id: expect.any(String), status: 'queued', suppressed_recipients: [] });
      const got = (await org.test.get(`/v1/emails/${r.body.id}`)).body;
      expect(got).toMatchObject({ topic_id: null, unsubscribed_recipients: [] });
      expect(got.to).toEqual(['ann@example.org', 'eve@example.org']);
    }
  });

  it('in a batch, each item on its own: one the topic reaches no one of is that item’s error', async () => {
    const r = await org.test.post('/v1/emails/batch', [
      { from: 'news@acme.test', to: ['ann@example.org'], subject: 's', text: 't', topic_id: weekly },
      { from: 'news@acme.test', to: ['bob@example.org'], subject: 's', text: 't', topic_id: weekly },
    ]);
    expect(r.status).toBe(200);
    expect(r.body.data[0].error.code).toBe('all_recipients_unsubscribed');
    expect(r.body.data[1]).toMatchObject({ status: 'queued', unsubscribed_recipients: [] });
  });
});
