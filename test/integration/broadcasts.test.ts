import { beforeAll, describe, expect, it } from 'vitest';
import { audienceDecider } from '../../domain/audiences/audience.decider.ts';
import { audienceStream } from '../../domain/audiences/audience.events.ts';
import { broadcastStream } from '../../domain/broadcasts/broadcast.events.ts';
import { SEND_TIME_RULE } from '../../domain/emails/send-time.ts';
import { templateDecider } from '../../domain/templates/template.decider.ts';
import { templateStream } from '../../domain/templates/template.events.ts';
import { topicDecider } from '../../domain/topics/topic.decider.ts';
import { topicStream } from '../../domain/topics/topic.events.ts';
import { ManualClock } from '../../platform/clock.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import { BroadcastExpansionProcess } from '../../processes/broadcasts/broadcast-expansion.process.ts';
import { expandBroadcast } from '../../processes/broadcasts/broadcast-step.ts';
import { recordOutcomes, startDeliveryAttempt, systemMeta } from '../../write-side/emails/email.commands.ts';
import { expectHiddenFromOutsiders, outsiders } from '../support/resources.ts';
import type { ApiClient } from '../support/service.ts';
import { useTwoOrgs } from '../support/service.ts';

const clock = new ManualClock('2026-09-01T08:00:00Z');
// Two contacts per step, so that a handful of contacts takes several steps.
const { svc, orgs } = useTwoOrgs(() => ({ clock, env: { BROADCAST_EXPANSION_BATCH: '2' } }));
let expansion: BroadcastExpansionProcess;
beforeAll(() => {
  expansion = new BroadcastExpansionProcess(svc.postline.services);
});

const ok = <T extends { status: number; body: any }>(r: T, status = 200) => {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
};
const audience = async (client: ApiClient, name = 'Readers') =>
  ok(await client.post('/v1/audiences', { name }), 201).id as string;
const createTopic = async (client: ApiClient, name: string, default_subscription: 'opt_in' | 'opt_out') =>
  ok(await client.post('/v1/topics', { name, default_subscription }), 201).id as string;
const contact = async (client: ApiClient, body: Record<string, unknown>) =>
  ok(await client.post('/v1/contacts', body), 201).id as string;
const draft = (client: ApiClient, body: Record<string, unknown>) =>
  client.post('/v1/broadcasts', {
    name: 'September news',
    from: 'Acme <news@acme.test>',
    subject: 'Hello {{contact.first_name}}',
    html: '<p>Hi {{contact.first_name}} {{contact.properties.plan}}</p>',
    text: 'Hi {{contact.first_name}}',
    ...body,
  });
/** Waits until the read models have taken in everything appended so far. */
const settled = async (...names: string[]) => {
  const { store, readYourWrites } = svc.postline.services;
  await readYourWrites.waitFor(names, await store.headPosition({ committed: true }));
};
/** The broadcast's emails, as the API shows them, oldest first. */
const emailsOf = async (client: ApiClient, broadcastId: string) => {
  await settled('emails', 'broadcasts');
  const { rows } = await svc.postline.services.db.query<{ id: string }>(
    'SELECT id FROM emails WHERE broadcast_id = $1 ORDER BY id',
    [broadcastId],
  );
  return Promise.all(rows.map(async (r) => ok(await client.get(`/v1/emails/${r.id}`))));
};
/** A broadcast to an audience of `n` new contacts (`<prefix>0@example.org`…), sent; not yet expanded. */
const sendingTo = async (client: ApiClient, prefix: string, n: number) => {
  const aud = await audience(client);
  for (let i = 0; i < n; i++)
    await contact(client, { email: `${prefix}${i}@example.org`, audience_ids: [aud] });
  const b = ok(await draft(client, { audience_id: aud }), 201);
  ok(await client.post(`/v1/broadcasts/${b.id}/send`, {}));
  return b as { id: string };
};
const broadcast = async (client: ApiClient, id: string) => {
  await settled('broadcasts', 'emails');
  return ok(await client.get(`/v1/broadcasts/${id}`));
};

describe('broadcasts: drafts', () => {
  it('create, get, list, update, delete', async () => {
    const aud = await audience(orgs.acme.test);
    const created = ok(await draft(orgs.acme.test, { audience_id: aud, reply_to: 'help@acme.test' }), 201);
    expect(created).toEqual({
      object: 'broadcast',
      id: expect.stringMatching(/^bc_[0-9a-z]+$/),
      name: 'September news',
      audience_id: aud,
      topic_id: null,
      from: 'Acme <news@acme.test>',
      reply_to: ['help@acme.test'],
      subject: 'Hello {{contact.first_name}}',
      html: '<p>Hi {{contact.first_name}} {{contact.properties.plan}}</p>',
      text: 'Hi {{contact.first_name}}',
      template_id: null,
      preview_text: null,
      status: 'draft',
      send_at: null,
      progress: {
        contacts_processed: 0,
        skipped: { unsubscribed: 0, suppressed: 0, not_subscribed: 0, quota_exceeded: 0, render_failed: 0 },
      },
      counts: {
        recipients: 0,
        queued: 0,
        sent: 0,
        delivered: 0,
        bounced: 0,
        complained: 0,
        canceled: 0,
        opened: 0,
        clicked: 0,
        unsubscribed: 0,
      },
      created_at: clock.now().toISOString(),
      updated_at: clock.now().toISOString(),
      started_at: null,
      sent_at: null,
      canceled_at: null,
    });
    expect(ok(await orgs.acme.test.get(`/v1/broadcasts/${created.id}`))).toEqual(created);

    const patched = ok(await orgs.acme.test.patch(`/v1/broadcasts/${created.id}`, { name: 'October news' }));
    expect(patched).toMatchObject({ name: 'October news', subject: created.subject });
    // The preview text set, kept by a change of other fields, then taken away; one line only.
    const previewed = ok(
      await orgs.acme.test.patch(`/v1/broadcasts/${created.id}`, { preview_text: ' Soon ' }),
    );
    expect(previewed.preview_text).toBe('Soon');
    expect(
      ok(await orgs.acme.test.patch(`/v1/broadcasts/${created.id}`, { subject: 'Other' })),
    ).toMatchObject({
      preview_text: 'Soon',
    });
    const cleared = ok(await orgs.acme.test.patch(`/v1/broadcasts/${created.id}`, { preview_text: null }));
    expect(cleared.preview_text).toBeNull();
    const twoLines = await orgs.acme.test.patch(`/v1/broadcasts/${created.id}`, { preview_text: 'a\nb' });
    expect([twoLines.status, twoLines.body.error.message]).toEqual([
      422,
      '`preview_text`: must not contain control characters (line breaks, tabs and the like)',
    ]);
    const list = ok(await orgs.acme.test.get('/v1/broadcasts'));
    expect(list).toMatchObject({ object: 'list', has_more: false });
    expect(list.data.map((b: any) => [b.id, b.name, b.recipients])).toContainEqual([
      created.id,
      'October news',
      0,
    ]);

    expect(ok(await orgs.acme.test.delete(`/v1/broadcasts/${created.id}`))).toEqual({
      id: created.id,
      deleted: true,
    });
    expect((await orgs.acme.test.get(`/v1/broadcasts/${created.id}`)).status).toBe(404);
    expect((await orgs.acme.test.delete(`/v1/broadcasts/${created.id}`)).status).toBe(404);
  });

  it('duplicates a broadcast in any status as a draft named Copy of …, for its organization only', async () => {
    const client = orgs.acme.test;
    const aud = await audience(client);
    const sent = ok(await draft(client, { audience_id: aud, preview_text: 'Soon', send: true }), 201);
    const copy = ok(await client.post(`/v1/broadcasts/${sent.id}/duplicate`), 201);
    expect(copy).toMatchObject({
      name: 'Copy of September news',
      status: 'draft',
      audience_id: aud,
      subject: sent.subject,
      html: sent.html,
      text: sent.text,
      preview_text: 'Soon',
      send_at: null,
    });
    expect(copy.id).not.toBe(sent.id);
    const long = ok(await draft(client, { audience_id: aud, name: 'n'.repeat(200) }), 201);
    expect(ok(await client.post(`/v1/broadcasts/${long.id}/duplicate`), 201).name).toHaveLength(200);
    // Another organization, and the other mode of its own.
    for (const outsider of [orgs.other.test, orgs.acme.live])
      expect((await outsider.post(`/v1/broadcasts/${sent.id}/duplicate`)).status).toBe(404);
    expect((await client.post('/v1/broadcasts/bc_01unknown/duplicate')).status).toBe(404);
  });

  it('keeps every field that changes made at the same time name', async () => {
    const aud = await audience(orgs.acme.test);
    const b = ok(await draft(orgs.acme.test, { audience_id: aud }), 201);
    const changes = [
      { name: 'Renamed' },
      { subject: 'New subject' },
      { text: 'New text' },
      { reply_to: ['help@acme.test'] },
      { from: 'Acme News <news@acme.test>' },
    ];
    const answers = await Promise.all(changes.map((c) => orgs.acme.test.patch(`/v1/broadcasts/${b.id}`, c)));
    for (const r of answers) ok(r);
    expect(await broadcast(orgs.acme.test, b.id)).toMatchObject({
      name: 'Renamed',
      subject: 'New subject',
      text: 'New text',
      reply_to: ['help@acme.test'],
      from: 'Acme News <news@acme.test>',
      html: b.html,
    });
  });

  it('keeps organizations and modes apart', async () => {
    const aud = await audience(orgs.acme.live);
    const mine = ok(await draft(orgs.acme.live, { audience_id: aud }), 201);
    await expectHiddenFromOutsiders(orgs, `/v1/broadcasts/${mine.id}`, { name: 'x' });
    for (const client of outsiders(orgs)) {
      expect((await client.post(`/v1/broadcasts/${mine.id}/send`, {})).status).toBe(404);
      expect((await client.post(`/v1/broadcasts/${mine.id}/cancel`, {})).status).toBe(404);
      expect(ok(await client.get('/v1/broadcasts')).data.map((b: any) => b.id)).not.toContain(mine.id);
      // Another organization's audience is not one a broadcast can name.
      const r = await draft(client, { audience_id: aud });
      expect([r.status, r.body.error.message]).toEqual([422, `\`audience_id\`: audience ${aud} not found`]);
    }
    expect((await orgs.acme.live.get('/v1/broadcasts/bc_01unknown')).body.error.code).toBe('not_found');
    expect((await orgs.acme.live.get('/v1/broadcasts/not-an-id')).status).toBe(404);
  });

  it.each([
    [{ audience_id: undefined }, '`audience_id`'],
    [{ audience_id: 'aud_01nothere' }, '`audience_id`: audience aud_01nothere not found'],
    [{ topic_id: 'top_01nothere' }, '`topic_id`: topic top_01nothere not found'],
    [{ name: '' }, '`name`'],
    [{ from: 'not an address' }, '`from`'],
    [{ reply_to: ['ok@acme.test', 'nope'] }, '`reply_to[1]`'],
    [{ subject: undefined }, '`subject`: is required'],
    [{ html: undefined, text: undefined }, '`html`'],
    [
      { template_id: 'tpl_01nothere', html: undefined, text: undefined },
      '`template_id`: template tpl_01nothere not found',
    ],
    [{ template_id: 'tpl_01x' }, '`template_id`: cannot be combined'],
    [{ subject: 'Hi {{name}}' }, '`subject`: variable `name` at line 1, column 6 is not available'],
    [
      { html: '<p>\n  {{#if contact}}{{coupon}}{{/if}}</p>' },
      '`html`: variable `coupon` at line 2, column 20',
    ],
    [{ html: '<p>{{#if}}</p>' }, '`html`'],
    [{ colour: 'red' }, '`colour`'],
    [{ reply_to: 5 }, '`reply_to`: must be an address or an array of at most 10 addresses'],
  ])('refuses %j with 422 naming %s', async (fields, message) => {
    const aud = await audience(orgs.acme.test);
    const r = await draft(orgs.acme.test, { audience_id: aud, ...fields });
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body.error.code).toBe('validation_error');
    expect(r.body.error.message).toContain(message);
  });

  it('refuses a list of reply-to addresses too long by its own rule, not a string length measured on it', async () => {
    const aud = await audience(orgs.acme.test);
    const replyTo = Array.from({ length: 999 }, (_, i) => `r${i}@acme.test`);
    const r = await draft(orgs.acme.test, { audience_id: aud, reply_to: replyTo });
    expect([r.status, r.body.error?.message]).toEqual([422, '`reply_to`: must have at most 10 addresses']);
  });

  it('sends only drafts, cancels only scheduled broadcasts', async () => {
    const aud = await audience(orgs.acme.test);
    const b = ok(await draft(orgs.acme.test, { audience_id: aud }), 201);
    const cancel = await orgs.acme.test.post(`/v1/broadcasts/${b.id}/cancel`, {});
    expect([cancel.status, cancel.body.error.code]).toEqual([409, 'broadcast_not_scheduled']);
    const past = await orgs.acme.test.post(`/v1/broadcasts/${b.id}/send`, {
      send_at: '2020-01-01T00:00:00Z',
    });
    expect([past.status, past.body.error.message]).toEqual([422, '`send_at`: must be in the future']);
    const unread = await orgs.acme.test.post(`/v1/broadcasts/${b.id}/send`, { scheduled_at: 'in a while' });
    expect([unread.status, unread.body.error.message]).toEqual([422, `\`scheduled_at\`: ${SEND_TIME_RULE}`]);
    expect(ok(await orgs.acme.test.post(`/v1/broadcasts/${b.id}/send`, {})).status).toBe('sending');
    for (const r of [
      await orgs.acme.test.post(`/v1/broadcasts/${b.id}/send`, {}),
      await orgs.acme.test.patch(`/v1/broadcasts/${b.id}`, { name: 'Too late' }),
      await orgs.acme.test.delete(`/v1/broadcasts/${b.id}`),
    ]) {
      expect([r.status, r.body.error.code]).toEqual([409, 'broadcast_not_draft']);
    }
  });

  it.each([
    [
      [{ name: 'order_id', type: 'string', required: true }],
      'requires the variable `order_id`, which a broadcast does not give; a broadcast renders with `contact` and `unsubscribe_url`',
    ],
    [
      [{ name: 'contact', type: 'string', required: true }],
      'declares `contact` as string; a broadcast gives it as an object',
    ],
    [
      [{ name: 'unsubscribe_url', type: 'object' }],
      'declares `unsubscribe_url` as object; a broadcast gives it as a string',
    ],
  ])(
    'refuses to send with a template whose variables %j no contact could render with',
    async (variables, message) => {
      const client = orgs.acme.test;
      const tpl = ok(
        await client.post('/v1/templates', {
          name: 'Order',
          subject: 'Your order',
          html: '<p>Hi</p>',
          variables,
        }),
        201,
      );
      ok(await client.post(`/v1/templates/${tpl.id}/publish`, {}));
      const aud = await audience(client);
      await contact(client, { email: `tpl-${variables[0].name}@example.org`, audience_ids: [aud] });
      const fields = {
        audience_id: aud,
        template_id: tpl.id,
        subject: undefined,
        html: undefined,
        text: undefined,
      };
      const b = ok(await draft(client, fields), 201);
      const r = await client.post(`/v1/broadcasts/${b.id}/send`, {});
      expect([r.status, r.body.error]).toEqual([
        422,
        {
          type: 'validation_error',
          code: 'validation_error',
          message: `\`template_id\`: template ${tpl.id} ${message}`,
        },
      ]);
      expect((await broadcast(client, b.id)).status).toBe('draft');
    },
  );

  it('creates and sends in one call with send: true, now or at scheduled_at, as Resend does', async () => {
    const client = orgs.acme.test;
    const aud = await audience(client);
    const now = ok(await draft(client, { audience_id: aud, send: true }), 201);
    expect(now).toMatchObject({ status: 'sending', send_at: null });
    const later = ok(await draft(client, { audience_id: aud, send: true, scheduled_at: 'in 2 hours' }), 201);
    expect(later).toMatchObject({
      status: 'scheduled',
      send_at: new Date(clock.now().getTime() + 7200_000).toISOString(),
    });
    const listed = async (c = client) => (await c.get('/v1/broadcasts?limit=100')).body.data.length;
    const before = await listed();
    const timeless = await draft(client, { audience_id: aud, scheduled_at: 'in 2 hours' });
    expect([timeless.status, timeless.body.error.message]).toEqual([
      422,
      '`scheduled_at`: needs `send: true`: a draft has no time',
    ]);
    const past = await draft(client, { audience_id: aud, send: true, scheduled_at: 'yesterday' });
    expect([past.status, past.body.error.message]).toEqual([422, '`send_at`: must be in the future']);
    // What the send refuses leaves no draft behind: a live key's unverified domain.
    const liveAudience = await audience(orgs.acme.live);
    const liveBefore = await listed(orgs.acme.live);
    const unverified = await draft(orgs.acme.live, { audience_id: liveAudience, send: true });
    expect([unverified.status, unverified.body.error.code]).toEqual([422, 'domain_not_verified']);
    expect(await listed(orgs.acme.live)).toBe(liveBefore);
    expect(await listed()).toBe(before);
  });

  it('refuses a send that gives the time under both names, as an email send does', async () => {
    const aud = await audience(orgs.acme.test);
    const b = ok(await draft(orgs.acme.test, { audience_id: aud }), 201);
    const at = (hours: number) => new Date(clock.now().getTime() + hours * 3600_000).toISOString();
    const r = await orgs.acme.test.post(`/v1/broadcasts/${b.id}/send`, {
      send_at: at(1),
      scheduled_at: at(2),
    });
    expect([r.status, r.body.error]).toEqual([
      422,
      {
        type: 'validation_error',
        code: 'validation_error',
        message: '`scheduled_at`: cannot be given with `send_at` (it is Resend’s name for it)',
      },
    ]);
    expect((await broadcast(orgs.acme.test, b.id)).status).toBe('draft');
  });

  it('needs a verified domain with an impressum to send live', async () => {
    const aud = await audience(orgs.acme.live);
    const b = ok(await draft(orgs.acme.live, { audience_id: aud }), 201);
    const r = await orgs.acme.live.post(`/v1/broadcasts/${b.id}/send`, {});
    expect([r.status, r.body.error.code]).toEqual([422, 'domain_not_verified']);
  });
});

describe('broadcasts: sending', () => {
  it('sends each member it may, personalised, with one-click unsubscribe headers and a footer', async () => {
    const client = orgs.acme.test;
    const aud = await audience(client);
    const topic = await createTopic(client, 'News', 'opt_in');
    await contact(client, {
      email: 'ann@example.org',
      first_name: 'Ann',
      properties: { plan: 'gold' },
      audience_ids: [aud],
    });
    await contact(client, { email: 'unsub@example.org', unsubscribed: true, audience_ids: [aud] });
    await contact(client, { email: 'blocked@example.org', audience_ids: [aud] });
    ok(await client.post('/v1/suppressions', { email: 'Blocked@example.org' }), 201);
    const optedOut = await contact(client, { email: 'out@example.org', audience_ids: [aud] });
    ok(await client.patch(`/v1/contacts/${optedOut}/topics`, [{ topic_id: topic, subscription: 'opt_out' }]));
    await contact(client, { email: 'bob@example.org', first_name: 'Bob', audience_ids: [aud] });
    await contact(client, { email: 'outsider@example.org' });

    const b = ok(await draft(client, { audience_id: aud, topic_id: topic }), 201);
    expect(ok(await client.post(`/v1/broadcasts/${b.id}/send`, {})).status).toBe('sending');
    // Five members, two per step: three steps, taken in one run.
    expect(await expansion.runOnce()).toBe(2);
    const after = await broadcast(client, b.id);
    expect(after).toMatchObject({
      status: 'sent',
      started_at: clock.now().toISOString(),
      sent_at: clock.now().toISOString(),
      progress: {
        contacts_processed: 5,
        skipped: { unsubscribed: 1, suppressed: 1, not_subscribed: 1, quota_exceeded: 0, render_failed: 0 },
      },
      counts: { recipients: 2, queued: 2, sent: 0 },
    });
    const emails = await emailsOf(client, b.id);
    expect(emails.map((e: any) => e.to)).toEqual(
      expect.arrayContaining([['Ann <ann@example.org>'], ['Bob <bob@example.org>']]),
    );
    const toAnn = emails.find((e: any) => e.to[0].includes('ann@'));
    expect(toAnn.subject).toBe('Hello Ann');
    // Each email is about the broadcast's topic; the audience query left the others out already.
    expect(toAnn).toMatchObject({ topic_id: topic, unsubscribed_recipients: [] });
    expect(toAnn.html).toMatch(
      /^<p>Hi Ann gold<\/p><div .*<a href="http:\/\/localhost:0\/unsubscribe\/em_[0-9a-z]+-[0-9a-z]{16}" data-postline-untracked>Unsubscribe<\/a><\/div>$/,
    );
    expect(toAnn.text).toMatch(/^Hi Ann\n\n-- \nUnsubscribe: http:\/\/localhost:0\/unsubscribe\/em_/);
    const url = /href="([^"]+)"/.exec(toAnn.html)![1];
    const token = url.split('/').at(-1);
    expect(toAnn.headers).toEqual({
      'List-Unsubscribe': `<${url}>, <mailto:unsubscribe+${token}@mx.postline.localhost>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    });
    expect(toAnn.id).toBe(token!.split('-')[0]);
    // Each recipient's own link.
    expect(emails.find((e: any) => e.to[0].includes('bob@')).html).not.toContain(token);

    // Running again finds nothing to do and sends no one twice.
    expect(await expansion.runOnce()).toBe(0);
    expect(await emailsOf(client, b.id)).toHaveLength(2);
  });

  it('renders Resend’s placeholders, kept as Postline’s variables, in a broadcast made without a name', async () => {
    const client = orgs.acme.test;
    const aud = await audience(client);
    await contact(client, { email: 'cleo@example.org', first_name: 'Cleo', audience_ids: [aud] });
    await contact(client, { email: 'dana@example.org', audience_ids: [aud] });
    // Resend's own example: no name, its placeholders with a fallback and its unsubscribe link.
    const made = await client.post('/v1/broadcasts', {
      audience_id: aud,
      from: 'Acme <news@acme.test>',
      subject: 'Hello {{{FIRST_NAME|there}}}',
      html: '<p>Hi {{{ FIRST_NAME | there }}}, <a href="{{{RESEND_UNSUBSCRIBE_URL}}}">unsubscribe</a></p>',
      text: 'Hi {{{FIRST_NAME|there}}} ({{{EMAIL}}})',
      preview_text: 'News & more',
    });
    const b = ok(made, 201);
    expect(b).toMatchObject({
      name: 'Untitled',
      preview_text: 'News & more',
      subject: 'Hello {{#if contact.first_name}}{{contact.first_name}}{{else}}there{{/if}}',
      text: 'Hi {{#if contact.first_name}}{{contact.first_name}}{{else}}there{{/if}} ({{contact.email}})',
    });
    ok(await client.post(`/v1/broadcasts/${b.id}/send`, {}));
    await expansion.runOnce();
    const emails = await emailsOf(client, b.id);
    const to = (who: string) => emails.find((e: any) => e.to[0].includes(who));
    expect([to('cleo@').subject, to('dana@').subject]).toEqual(['Hello Cleo', 'Hello there']);
    expect(to('dana@').text).toMatch(/^Hi there \(dana@example\.org\)\n/);
    // The preview text first in the html, hidden; not in the text.
    expect(to('cleo@').html).toMatch(/^<div style="display:none;[^"]*">News &amp; more<\/div><p>Hi Cleo, /);
    const link = /<a href="([^"]+)">unsubscribe<\/a>/.exec(to('cleo@').html)?.[1];
    expect(link).toMatch(/^http:\/\/localhost:0\/unsubscribe\/em_[0-9a-z]+-[0-9a-z]{16}$/);
  });

  it('renders a published template with the contact and the unsubscribe URL', async () => {
    const client = orgs.acme.test;
    const tpl = ok(
      await client.post('/v1/templates', {
        name: 'Newsletter',
        subject: 'News for {{contact.first_name}}',
        html: '<p>Dear {{contact.first_name}}, <a href="{{unsubscribe_url}}">leave</a></p>',
        variables: [
          { name: 'contact', type: 'object', required: true },
          { name: 'unsubscribe_url', type: 'string' },
        ],
      }),
      201,
    );
    ok(await client.post(`/v1/templates/${tpl.id}/publish`, {}));
    const aud = await audience(client);
    await contact(client, { email: 'tess@example.org', first_name: 'Tess', audience_ids: [aud] });
    const b = ok(
      await draft(client, {
        audience_id: aud,
        template_id: tpl.id,
        subject: undefined,
        html: undefined,
        text: undefined,
      }),
      201,
    );
    ok(await client.post(`/v1/broadcasts/${b.id}/send`, {}));
    await expansion.runOnce();
    const [email] = await emailsOf(client, b.id);
    expect(email.subject).toBe('News for Tess');
    expect(email.template_id).toBe(tpl.id);
    expect(email.html).toMatch(
      /^<p>Dear Tess, <a href="http:\/\/[^"]+\/unsubscribe\/em_[^"]+">leave<\/a><\/p><div/,
    );
  });

  /** A published template for broadcasts, and a broadcast of it to an audience of `emails`, still a draft. */
  const templateBroadcast = async (client: ApiClient, emails: string[]) => {
    const tpl = ok(
      await client.post('/v1/templates', {
        name: 'Newsletter',
        subject: 'News for {{contact.first_name}}',
        html: '<p>Dear {{contact.first_name}}</p>',
        variables: [{ name: 'contact', type: 'object', required: true }],
      }),
      201,
    );
    ok(await client.post(`/v1/templates/${tpl.id}/publish`, {}));
    const aud = await audience(client);
    for (const email of emails) await contact(client, { email, first_name: 'Tess', audience_ids: [aud] });
    const fields = {
      audience_id: aud,
      template_id: tpl.id,
      subject: undefined,
      html: undefined,
      text: undefined,
    };
    const b = ok(await draft(client, fields), 201);
    return { templateId: tpl.id as string, broadcastId: b.id as string };
  };
  const inAnHour = () => new Date(clock.now().getTime() + 3600_000).toISOString();

  it('keeps a template that a scheduled or sending broadcast uses: its deletion is refused until it is sent', async () => {
    const client = orgs.acme.test;
    const emails = ['keep1@example.org', 'keep2@example.org', 'keep3@example.org'];
    const { templateId, broadcastId } = await templateBroadcast(client, emails);
    ok(await client.post(`/v1/broadcasts/${broadcastId}/send`, { send_at: inAnHour() }));
    const refused = async (status: string) => {
      const r = await client.delete(`/v1/templates/${templateId}`);
      expect([r.status, r.body.error.code, r.body.error.message]).toEqual([
        409,
        'conflict',
        `Template ${templateId} is used by broadcast ${broadcastId}, which is ${status}; cancel the broadcast or wait until it is sent, then delete the template.`,
      ]);
    };
    await refused('scheduled');
    // Due: the first page of two goes out, the third contact is still to come.
    clock.advance(3600_000);
    expect(await expandBroadcast(svc.postline.services, broadcastId)).toMatchObject({ queued: 2 });
    expect((await broadcast(client, broadcastId)).status).toBe('sending');
    await refused('sending');
    expect(await expandBroadcast(svc.postline.services, broadcastId)).toEqual({ queued: 1, next: null });
    expect(await broadcast(client, broadcastId)).toMatchObject({ status: 'sent', counts: { recipients: 3 } });
    const emailsSent = await emailsOf(client, broadcastId);
    expect(emailsSent.map((e: any) => [e.subject, e.template_id])).toEqual(
      emails.map(() => ['News for Tess', templateId]),
    );
    // Sent: nothing renders it any more.
    expect(ok(await client.delete(`/v1/templates/${templateId}`))).toEqual({ id: templateId, deleted: true });
  });

  /** A deletion as the log would hold it had it raced the delete's check: the decider alone. */
  const deleteBehindTheCheck = async (
    org: { orgId: string },
    kind: 'template' | 'topic' | 'audience',
    id: string,
  ) => {
    const { store } = svc.postline.services;
    const meta = { orgId: org.orgId, mode: 'test' as const, actor: 'test' };
    const caller = { ...meta, at: clock.now().toISOString() };
    if (kind === 'template')
      await handleCommand(
        store,
        templateStream(id),
        templateDecider,
        { type: 'DeleteTemplate', templateId: id, ...caller },
        meta,
      );
    if (kind === 'topic')
      await handleCommand(
        store,
        topicStream(id),
        topicDecider,
        { type: 'DeleteTopic', topicId: id, ...caller },
        meta,
      );
    if (kind === 'audience')
      await handleCommand(
        store,
        audienceStream(id),
        audienceDecider,
        { type: 'DeleteAudience', audienceId: id, ...caller },
        meta,
      );
    await settled(`${kind}s`);
  };

  it('sends no email with a blank subject: a contact whose data renders none is counted as not rendered', async () => {
    const client = orgs.acme.test;
    const aud = await audience(client);
    await contact(client, { email: 'named@example.org', first_name: 'Nia', audience_ids: [aud] });
    await contact(client, { email: 'nameless@example.org', audience_ids: [aud] });
    const b = ok(await draft(client, { audience_id: aud, subject: '{{contact.first_name}}' }), 201);
    ok(await client.post(`/v1/broadcasts/${b.id}/send`, {}));
    await expansion.runOnce();
    expect((await emailsOf(client, b.id)).map((e: any) => [e.to[0], e.subject])).toEqual([
      ['Nia <named@example.org>', 'Nia'],
    ]);
    expect(await broadcast(client, b.id)).toMatchObject({
      status: 'sent',
      progress: { contacts_processed: 2, skipped: { render_failed: 1 } },
      counts: { recipients: 1 },
    });
  });

  it('sends no one, rather than blank emails, when the template of a scheduled broadcast is gone', async () => {
    const client = orgs.acme.test;
    const emails = ['gone1@example.org', 'gone2@example.org', 'gone3@example.org'];
    const { templateId, broadcastId } = await templateBroadcast(client, emails);
    ok(await client.post(`/v1/broadcasts/${broadcastId}/send`, { send_at: inAnHour() }));
    await deleteBehindTheCheck(orgs.acme, 'template', templateId);
    clock.advance(3600_000);
    await expansion.runOnce();
    expect(await emailsOf(client, broadcastId)).toEqual([]);
    // Each contact counted as not rendered, over both pages.
    expect(await broadcast(client, broadcastId)).toMatchObject({
      status: 'sent',
      progress: { contacts_processed: 3, skipped: { render_failed: 3 } },
      counts: { recipients: 0 },
    });
  });

  it('sends the rest of the audience nothing when the template is gone between two pages', async () => {
    const client = orgs.acme.test;
    const emails = ['half1@example.org', 'half2@example.org', 'half3@example.org'];
    const { templateId, broadcastId } = await templateBroadcast(client, emails);
    ok(await client.post(`/v1/broadcasts/${broadcastId}/send`, {}));
    expect(await expandBroadcast(svc.postline.services, broadcastId)).toMatchObject({ queued: 2 });
    await deleteBehindTheCheck(orgs.acme, 'template', templateId);
    expect(await expandBroadcast(svc.postline.services, broadcastId)).toEqual({ queued: 0, next: null });
    const sent = await emailsOf(client, broadcastId);
    // In an order of their own: a broadcast email's id is a hash of its contact's, not of the contact's turn.
    expect(sent.map((e: any) => [e.to[0], e.subject, e.html?.startsWith('<p>Dear Tess</p>')]).sort()).toEqual(
      [
        ['Tess <half1@example.org>', 'News for Tess', true],
        ['Tess <half2@example.org>', 'News for Tess', true],
      ],
    );
    expect(await broadcast(client, broadcastId)).toMatchObject({
      status: 'sent',
      progress: { contacts_processed: 3, skipped: { render_failed: 1 } },
      counts: { recipients: 2 },
    });
  });

  /**
   * An audience of `emails` and an `opt_out` topic that every other one opted in to (the first, the third…; the others never did), and a
   * broadcast to the audience about the topic, still a draft.
   */
  const topicBroadcast = async (client: ApiClient, emails: string[]) => {
    const aud = await audience(client);
    const topic = await createTopic(client, 'Offers', 'opt_out');
    for (const [i, email] of emails.entries()) {
      const id = await contact(client, { email, audience_ids: [aud] });
      if (i % 2 === 0)
        ok(await client.patch(`/v1/contacts/${id}/topics`, [{ topic_id: topic, subscription: 'opt_in' }]));
    }
    const b = ok(await draft(client, { audience_id: aud, topic_id: topic }), 201);
    return { audienceId: aud, topicId: topic, broadcastId: b.id as string };
  };

  it('keeps the topic and the audience of a scheduled or sending broadcast: their deletion is refused until it is sent', async () => {
    const client = orgs.acme.test;
    const emails = ['held1@example.org', 'held2@example.org', 'held3@example.org'];
    const { audienceId, topicId, broadcastId } = await topicBroadcast(client, emails);
    ok(await client.post(`/v1/broadcasts/${broadcastId}/send`, { send_at: inAnHour() }));
    const refused = async (status: string) => {
      for (const [kind, name, id] of [
        ['topics', 'Topic', topicId],
        ['audiences', 'Audience', audienceId],
      ]) {
        const r = await client.delete(`/v1/${kind}/${id}`);
        expect([r.status, r.body.error.code, r.body.error.message]).toEqual([
          409,
          'conflict',
          `${name} ${id} is used by broadcast ${broadcastId}, which is ${status}; cancel the broadcast or wait until it is sent, then delete the ${name.toLowerCase()}.`,
        ]);
      }
    };
    await refused('scheduled');
    clock.advance(3600_000);
    expect(await expandBroadcast(svc.postline.services, broadcastId)).toMatchObject({ queued: 1 });
    expect((await broadcast(client, broadcastId)).status).toBe('sending');
    await refused('sending');
    expect(await expandBroadcast(svc.postline.services, broadcastId)).toEqual({ queued: 1, next: null });
    expect(await broadcast(client, broadcastId)).toMatchObject({ status: 'sent', counts: { recipients: 2 } });
    // Sent: nothing sends to them any more.
    expect(ok(await client.delete(`/v1/topics/${topicId}`))).toEqual({ id: topicId, deleted: true });
    expect(ok(await client.delete(`/v1/audiences/${audienceId}`))).toEqual({ id: audienceId, deleted: true });
  });

  it('sends no one, rather than the whole audience, when the topic of a scheduled broadcast is gone', async () => {
    const client = orgs.acme.test;
    const emails = ['topicless1@example.org', 'topicless2@example.org', 'topicless3@example.org'];
    const { topicId, broadcastId } = await topicBroadcast(client, emails);
    ok(await client.post(`/v1/broadcasts/${broadcastId}/send`, { send_at: inAnHour() }));
    await deleteBehindTheCheck(orgs.acme, 'topic', topicId);
    clock.advance(3600_000);
    await expansion.runOnce();
    expect(await emailsOf(client, broadcastId)).toEqual([]);
    // The opted in and those who never opted in alike, over both pages.
    expect(await broadcast(client, broadcastId)).toMatchObject({
      status: 'sent',
      progress: { contacts_processed: 3, skipped: { not_subscribed: 3 } },
      counts: { recipients: 0 },
    });
  });

  it('sends the rest of the audience nothing when the topic is gone between two pages', async () => {
    const client = orgs.acme.test;
    const emails = ['midtopic1@example.org', 'midtopic2@example.org', 'midtopic3@example.org'];
    const { topicId, broadcastId } = await topicBroadcast(client, emails);
    // The first page holds one who opted in and one who never did; the second, one who opted in.
    ok(await client.post(`/v1/broadcasts/${broadcastId}/send`, {}));
    expect(await expandBroadcast(svc.postline.services, broadcastId)).toMatchObject({ queued: 1 });
    await deleteBehindTheCheck(orgs.acme, 'topic', topicId);
    expect(await expandBroadcast(svc.postline.services, broadcastId)).toEqual({ queued: 0, next: null });
    expect((await emailsOf(client, broadcastId)).map((e: any) => e.to[0]).sort()).toEqual([emails[0]]);
    expect(await broadcast(client, broadcastId)).toMatchObject({
      status: 'sent',
      progress: { contacts_processed: 3, skipped: { not_subscribed: 2 } },
      counts: { recipients: 1 },
    });
  });

  it('sends no one when the audience of a scheduled broadcast is gone', async () => {
    const client = orgs.acme.test;
    const aud = await audience(client);
    for (const email of ['orphan1@example.org', 'orphan2@example.org', 'orphan3@example.org'])
      await contact(client, { email, audience_ids: [aud] });
    const { id: broadcastId } = ok(await draft(client, { audience_id: aud }), 201);
    ok(await client.post(`/v1/broadcasts/${broadcastId}/send`, { send_at: inAnHour() }));
    await deleteBehindTheCheck(orgs.acme, 'audience', aud);
    clock.advance(3600_000);
    await expansion.runOnce();
    expect(await emailsOf(client, broadcastId)).toEqual([]);
    expect(await broadcast(client, broadcastId)).toMatchObject({
      status: 'sent',
      progress: { contacts_processed: 0 },
      counts: { recipients: 0 },
    });
  });

  it('schedules, cancels back to a draft, and sends a scheduled broadcast when it falls due', async () => {
    const client = orgs.acme.test;
    const aud = await audience(client);
    await contact(client, { email: 'sched@example.org', audience_ids: [aud] });
    const at = new Date(clock.now().getTime() + 3600_000).toISOString();
    const canceled = ok(await draft(client, { audience_id: aud }), 201);
    expect(ok(await client.post(`/v1/broadcasts/${canceled.id}/send`, { send_at: at }))).toMatchObject({
      status: 'scheduled',
      send_at: at,
    });
    // Canceled before its time, it is a draft again: changed, scheduled and canceled once more.
    expect(ok(await client.post(`/v1/broadcasts/${canceled.id}/cancel`, {}))).toMatchObject({
      status: 'draft',
      send_at: null,
      canceled_at: null,
    });
    ok(await client.patch(`/v1/broadcasts/${canceled.id}`, { subject: 'Changed' }));
    ok(await client.post(`/v1/broadcasts/${canceled.id}/send`, { send_at: at }));
    expect(ok(await client.post(`/v1/broadcasts/${canceled.id}/cancel`, {}))).toMatchObject({
      status: 'draft',
      subject: 'Changed',
    });
    const later = ok(await draft(client, { audience_id: aud }), 201);
    // Resend's name for the time, in words: read when the request is handled.
    expect(
      ok(await client.post(`/v1/broadcasts/${later.id}/send`, { scheduled_at: 'in 1 hour' })),
    ).toMatchObject({ status: 'scheduled', send_at: at });
    expect(await expansion.runOnce()).toBe(0);
    expect((await broadcast(client, later.id)).status).toBe('scheduled');

    clock.advance(3600_000);
    expect(await expansion.runOnce()).toBe(1);
    expect(await broadcast(client, later.id)).toMatchObject({ status: 'sent', counts: { recipients: 1 } });
    // Its time came as a draft: nothing went out.
    expect(await broadcast(client, canceled.id)).toMatchObject({
      status: 'draft',
      counts: { recipients: 0 },
    });
  });

  it('stops at the Free plan’s monthly quota', async () => {
    const client = orgs.other.test;
    // 99 of the 100 emails of the month.
    const batch = Array.from({ length: 99 }, (_, i) => ({
      from: 'x@other.test',
      to: `r${i}@example.org`,
      subject: 's',
      text: 't',
    }));
    ok(await client.post('/v1/emails/batch', batch));
    const aud = await audience(client);
    for (const n of [1, 2, 3]) await contact(client, { email: `q${n}@example.org`, audience_ids: [aud] });
    const b = ok(await draft(client, { audience_id: aud, from: 'x@other.test' }), 201);
    ok(await client.post(`/v1/broadcasts/${b.id}/send`, {}));
    await expansion.runOnce();
    expect(await broadcast(client, b.id)).toMatchObject({
      status: 'sent',
      progress: { contacts_processed: 3, skipped: { quota_exceeded: 2 } },
      counts: { recipients: 1 },
    });
  });

  it('keeps pages in flight, records them in order, and a run stopped between them resumes', async () => {
    const client = orgs.acme.test;
    const b = await sendingTo(client, 'page', 7);
    const services = svc.postline.services;
    // A run asked for one page more: two pages of two contacts, in flight together, both recorded.
    let asked = 0;
    const first = await expandBroadcast(services, b.id, () => asked++ < 1);
    expect(first).toMatchObject({ queued: 4, next: expect.any(Date) });
    expect(await broadcast(client, b.id)).toMatchObject({
      status: 'sending',
      progress: { contacts_processed: 4 },
    });
    // The rest in one run: its pages in flight two at a time.
    expect(await expandBroadcast(services, b.id, () => true)).toEqual({ queued: 3, next: null });
    expect(await broadcast(client, b.id)).toMatchObject({
      status: 'sent',
      progress: { contacts_processed: 7 },
      counts: { recipients: 7 },
    });
    const steps = (await services.store.readStream(broadcastStream(b.id))).filter(
      (e) => e.type === 'BroadcastBatchExpanded',
    );
    // Each page after the one before it: the cursors chain, from the start to the last contact.
    expect(steps.map((e: any) => e.data.queued)).toEqual([2, 2, 2, 1]);
    const data = steps.map((e) => e.data as { after: string; cursor: string });
    expect(data.map((d) => d.after)).toEqual(['', ...data.slice(0, -1).map((d) => d.cursor)]);
    const emails = await emailsOf(client, b.id);
    expect(emails.map((e: any) => e.to[0]).sort()).toEqual(
      [0, 1, 2, 3, 4, 5, 6].map((n) => `page${n}@example.org`),
    );
  });

  it('stops a sending broadcast: no more pages, and its emails nobody received canceled, deferred ones too', async () => {
    const client = orgs.acme.test;
    const b = await sendingTo(client, 'stop', 5);
    const services = svc.postline.services;
    expect(await expandBroadcast(services, b.id)).toMatchObject({ queued: 2, next: expect.any(Date) });
    expect(await expandBroadcast(services, b.id)).toMatchObject({ queued: 2, next: expect.any(Date) });
    const [inFlight, deferred, received, queued] = await emailsOf(client, b.id);
    const meta = systemMeta({ orgId: orgs.acme.orgId, mode: 'test' });
    const endsBy = new Date(clock.now().getTime() + 10 * 60_000).toISOString();
    const attempt = (e: any) => startDeliveryAttempt(services, meta, e.id, { recipients: e.to, endsBy });
    const outcome = (e: any, result: 'delayed' | 'delivered') =>
      recordOutcomes(services, meta, e.id, `<${e.id}@acme.test>`, [
        {
          recipient: e.to[0],
          result,
          attempt: 1,
          smtpResponse: result === 'delayed' ? '451 4.7.1 Try again later' : '250 2.0.0 Ok',
          ...(result === 'delayed' && {
            smtpCode: 451,
            nextAttemptAt: new Date(clock.now().getTime() + 60 * 60_000).toISOString(),
          }),
        },
      ]);
    // The MTA is sending one of them; one its server deferred waits for a retry; another's server took it.
    await attempt(inFlight);
    await attempt(deferred);
    await outcome(deferred, 'delayed');
    await attempt(received);
    await outcome(received, 'delivered');
    expect(ok(await client.post(`/v1/broadcasts/${b.id}/cancel`, {}))).toMatchObject({
      status: 'canceled',
      canceled_at: clock.now().toISOString(),
    });
    // The process has the broadcast due again: its step withdraws instead of expanding, and is the last.
    expect(await expansion.runOnce()).toBe(0);
    expect(await broadcast(client, b.id)).toMatchObject({
      status: 'canceled',
      progress: { contacts_processed: 4 },
      counts: { recipients: 4, queued: 1, sent: 1, delivered: 1, canceled: 2 },
    });
    expect((await emailsOf(client, b.id)).map((e: any) => [e.id, e.status, e.last_event])).toEqual([
      [inFlight.id, 'sending', expect.any(String)],
      [deferred.id, 'canceled', 'email.canceled'],
      [received.id, 'delivered', 'email.delivered'],
      [queued.id, 'canceled', 'email.canceled'],
    ]);
    // The deferred one keeps its recipient's last outcome, without the retry it will not make.
    expect(ok(await client.get(`/v1/emails/${deferred.id}`)).recipients).toMatchObject([
      { status: 'delayed', attempts: 1, smtp_code: 451, next_attempt_at: null },
    ]);
    // The attempt under way ends deferred: the broadcast is due again when that attempt ends, and withdraws it.
    await outcome(inFlight, 'delayed');
    expect(await expansion.runOnce()).toBe(0);
    expect((await emailsOf(client, b.id))[0].status).toBe('sent');
    clock.set(endsBy);
    expect(await expansion.runOnce()).toBe(0);
    expect(await broadcast(client, b.id)).toMatchObject({
      counts: { recipients: 4, queued: 0, sent: 1, delivered: 1, canceled: 3 },
    });
    const refused = await client.post(`/v1/broadcasts/${b.id}/cancel`, {});
    expect([refused.status, refused.body.error.code]).toEqual([409, 'broadcast_not_scheduled']);
    expect(await expandBroadcast(services, b.id)).toEqual({ queued: 0, next: null });
  });

  it('two expansions racing send everyone once', async () => {
    const client = orgs.acme.test;
    const b = await sendingTo(client, 'race', 5);
    const services = svc.postline.services;
    // Steps taken side by side, as two processes whose claims crossed (or one resumed after a crash) would.
    for (let step = 0; step < 3; step++)
      await Promise.all([expandBroadcast(services, b.id), expandBroadcast(services, b.id)]);
    expect(await broadcast(client, b.id)).toMatchObject({
      status: 'sent',
      progress: { contacts_processed: 5 },
      counts: { recipients: 5 },
    });
    const emails = await emailsOf(client, b.id);
    expect(emails.map((e: any) => e.to[0]).sort()).toEqual(
      [0, 1, 2, 3, 4].map((n) => `race${n}@example.org`),
    );
  });
});

describe('unsubscribing', () => {
  /** A sent broadcast to one contact; its email's unsubscribe URL. */
  const sentTo = async (email: string, topic?: string) => {
    const client = orgs.acme.test;
    const aud = await audience(client);
    const id = await contact(client, { email, first_name: 'Uma', audience_ids: [aud] });
    const b = ok(await draft(client, { audience_id: aud, ...(topic && { topic_id: topic }) }), 201);
    ok(await client.post(`/v1/broadcasts/${b.id}/send`, {}));
    await expansion.runOnce();
    const [sent] = await emailsOf(client, b.id);
    // PUBLIC_URL names port 0 here (the service takes a free one): the same path on the port it listens on.
    const link = /<([^>]+)>/.exec(sent.headers['List-Unsubscribe'])![1];
    return { contactId: id, broadcastId: b.id, url: link.replace(/^http:\/\/[^/]+/, svc.baseUrl) };
  };
  const contactNow = async (id: string) => {
    await settled('contacts');
    return ok(await orgs.acme.test.get(`/v1/contacts/${id}`));
  };

  it('GET only shows a page; POST List-Unsubscribe=One-Click unsubscribes at once', async () => {
    const { contactId, broadcastId, url } = await sentTo('uma@example.org');
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await page.text();
    // The address the email went to, masked (docs/broadcasts.md).
    expect(html).toContain('u***@example.org');
    expect(html).not.toContain('uma@example.org');
    expect(html).toContain('<input type="hidden" name="List-Unsubscribe" value="One-Click">');
    expect((await contactNow(contactId)).unsubscribed).toBe(false);

    const post = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(post.status).toBe(200);
    expect(await post.text()).toContain('You are unsubscribed');
    expect((await contactNow(contactId)).unsubscribed).toBe(true);
    expect((await broadcast(orgs.acme.test, broadcastId)).counts.unsubscribed).toBe(1);
    // Again: still 200, nothing new.
    expect((await fetch(url, { method: 'POST', body: 'List-Unsubscribe=One-Click' })).status).toBe(200);
    expect((await broadcast(orgs.acme.test, broadcastId)).counts.unsubscribed).toBe(1);
  });

  it('takes the one-click POST as multipart too, and leaves only the topic when the broadcast had one', async () => {
    const client = orgs.acme.test;
    const topic = await createTopic(client, 'Deals', 'opt_in');
    const { contactId, url } = await sentTo('tom@example.org', topic);
    const form = new FormData();
    form.set('List-Unsubscribe', 'One-Click');
    expect((await fetch(url, { method: 'POST', body: form })).status).toBe(200);
    expect((await contactNow(contactId)).unsubscribed).toBe(false);
    await settled('contacts');
    const topics = ok(await client.get(`/v1/contacts/${contactId}/topics`)).data;
    expect(topics.find((t: any) => t.id === topic).subscription).toBe('opt_out');
  });

  it('saves topic preferences from the page', async () => {
    const client = orgs.acme.test;
    const topic = await createTopic(client, 'Tips', 'opt_out');
    const { contactId, url } = await sentTo('pia@example.org');
    expect(await (await fetch(url)).text()).toContain(`value="${topic}"`);
    const r = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `action=preferences&topic=${topic}`,
    });
    expect(r.status).toBe(200);
    await settled('contacts');
    const topics = ok(await client.get(`/v1/contacts/${contactId}/topics`)).data;
    expect(topics.find((t: any) => t.id === topic).subscription).toBe('opt_in');
  });

  it('answers a forged, altered or unknown token with a friendly page', async () => {
    const { url, contactId } = await sentTo('zed@example.org');
    const token = url.split('/').at(-1)!;
    const [emailId, mac] = token.split('-');
    const otherId = `em_${'0'.repeat(26)}`;
    for (const bad of [`${otherId}-${mac}`, `${emailId}-${'a'.repeat(16)}`, 'nonsense', `${emailId}`]) {
      for (const method of ['GET', 'POST']) {
        const r = await fetch(url.replace(token, bad), {
          method,
          body: method === 'POST' ? 'List-Unsubscribe=One-Click' : undefined,
        });
        expect(r.status).toBe(404);
        expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
        expect(await r.text()).toContain('This link does not work');
      }
    }
    // A POST that is neither: 400, nothing changed.
    expect((await fetch(url, { method: 'POST', body: 'hello' })).status).toBe(400);
    expect((await contactNow(contactId)).unsubscribed).toBe(false);
    // The token is case-insensitive (a mail server may lower-case it); upper case still works.
    expect((await fetch(url.replace(token, token.toUpperCase()))).status).toBe(200);
  });

  it('answers hostile tokens and bodies without a server error, and changes nothing', async () => {
    const { url, contactId } = await sentTo('hal@example.org');
    const token = url.split('/').at(-1)!;
    // A lone surrogate, NUL, CR/LF and a huge token in the path: 404 page or the error shape, never a 5xx.
    for (const bad of ['%ED%A0%80', `${token}%00`, `${token}%0D%0ASet-Cookie:%20x=1`, 'a'.repeat(10_000)]) {
      for (const method of ['GET', 'POST']) {
        const r = await fetch(url.replace(token, bad), {
          method,
          body: method === 'POST' ? 'List-Unsubscribe=One-Click' : undefined,
        });
        expect([400, 404, 414, 431], `${method} ${bad.slice(0, 30)}`).toContain(r.status);
        expect(r.headers.get('set-cookie')).toBeNull();
      }
    }
    // Hostile bodies on the real link: NUL and CR/LF in the form, a lone surrogate, a body past 16 KB.
    for (const body of [
      'List-Unsubscribe=One-Click%00',
      'List-Unsubscribe=One%0D%0AClick',
      'action=preferences&topic=%ED%A0%80',
      `List-Unsubscribe=${'x'.repeat(20_000)}`,
    ]) {
      const r = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
      expect(r.status, body.slice(0, 40)).toBeLessThan(500);
    }
    const tooBig = await fetch(url, { method: 'POST', body: 'x'.repeat(20_000) });
    expect([tooBig.status, (await tooBig.json()).error.code]).toEqual([413, 'body_too_large']);
    expect((await contactNow(contactId)).unsubscribed).toBe(false);
  });
});
