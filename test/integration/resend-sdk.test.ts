import { Resend } from 'resend';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { messageWithAttachment } from '../fixtures/received-email.ts';
import { documentCheckingFetch } from '../support/openapi-responses.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

/**
 * Resend's own SDK (the `resend` package, pinned) pointed at Postline, as a user who arrives from Resend would
 * use it: `new Resend(key, { baseUrl })`. What works is listed in docs/resend.md; each line there has its test here.
 */
let acme: TestOrg;
let resend: Resend;
const SIM = 'simulator.postline.dev';

const svc = useTestService();
beforeAll(async () => {
  acme = await svc.createOrg('pro');
  resend = new Resend(acme.testKey, { baseUrl: `${svc.baseUrl}/v1` });
  // The SDK logs every error answer to the console; the tests read them from its results.
  vi.spyOn(console, 'error').mockImplementation(() => {});
  // What the SDK receives is held to the OpenAPI document, as apiClient's answers are.
  const checking = documentCheckingFetch(globalThis.fetch, (problem) => undocumented.push(problem));
  vi.spyOn(globalThis, 'fetch').mockImplementation(checking);
});
const undocumented: string[] = [];
afterAll(() => {
  vi.restoreAllMocks();
  expect(undocumented).toEqual([]);
});

const inAnHour = () => new Date(Date.now() + 3600_000).toISOString();

describe("Resend's SDK against Postline", () => {
  it('emails.send with html, text, reply-to, Resend-style tags, headers and a Buffer attachment; emails.get', async () => {
    const sent = await resend.emails.send({
      from: 'Acme <hello@acme.test>',
      to: [`delivered@${SIM}`],
      replyTo: 'support@acme.test',
      subject: 'Welcome',
      html: '<p>Welcome</p>',
      text: 'Welcome',
      tags: [
        { name: 'category', value: 'welcome' },
        { name: 'cohort', value: '2026' },
      ],
      headers: { 'X-Campaign': 'spring' },
      attachments: [
        { filename: 'hello.txt', content: Buffer.from('hello there'), contentType: 'text/plain' },
      ],
    });
    expect(sent.error).toBeNull();
    expect(sent.data?.id).toMatch(/^em_[0-9a-z]+$/);
    const got = await resend.emails.get(sent.data!.id);
    expect(got.error).toBeNull();
    expect(got.data).toMatchObject({
      id: sent.data!.id,
      from: 'Acme <hello@acme.test>',
      to: [`delivered@${SIM}`],
      reply_to: ['support@acme.test'],
      subject: 'Welcome',
      tags: ['category:welcome', 'cohort:2026'],
    });
    const attachments = await acme.test.get(`/v1/emails/${sent.data!.id}/attachments`);
    expect(attachments.body.data.map((a: any) => [a.filename, a.size])).toEqual([['hello.txt', 11]]);
  });

  it('emails.metrics: the figures of a range, by day', async () => {
    const sent = await resend.emails.send({
      from: 'Acme <hello@acme.test>',
      to: `delivered@${SIM}`,
      subject: 'Counted',
      text: 'Counted',
    });
    expect(sent.error).toBeNull();
    // The day it was accepted on (UTC), whenever the test runs.
    const today = (await resend.emails.get(sent.data!.id)).data!.created_at.slice(0, 10);
    const got = await resend.emails.metrics({
      startDate: today,
      endDate: today,
      dimensions: ['period'],
      metrics: ['received', 'delivery_rate'],
      emailId: [sent.data!.id],
    });
    expect(got.error).toBeNull();
    expect(got.data).toMatchObject({
      object: 'metrics',
      start_date: `${today}T00:00:00.000Z`,
      metrics: ['received', 'delivery_rate'],
      totals: { received: 1 },
      data: [{ period: `${today}T00:00:00.000Z`, received: 1 }],
    });
  });

  it('batch.send: strict (the SDK’s default) refuses the whole batch for a bad item, permissive sends the rest', async () => {
    const one = {
      from: 'Acme <hello@acme.test>',
      to: [`delivered@${SIM}`],
      subject: 'One',
      html: '<p>1</p>',
    };
    const batch = await resend.batch.send([one, { ...one, subject: 'Two', html: undefined, text: '2' }]);
    expect(batch.error).toBeNull();
    expect(batch.data?.data.map((e) => e.id)).toEqual([
      expect.stringMatching(/^em_/),
      expect.stringMatching(/^em_/),
    ]);
    const bad = { ...one, to: ['not an address'] };
    const strict = await resend.batch.send([one, bad]);
    expect(strict.error).toMatchObject({
      error: { code: 'validation_error', message: expect.stringContaining('`body[1]`') },
    });
    const permissive = await resend.batch.send([one, bad], { batchValidation: 'permissive' });
    expect(permissive.data?.data.map((e: any) => e.id ?? e.error.code)).toEqual([
      expect.stringMatching(/^em_/),
      'validation_error',
    ]);
  });

  it('scheduledAt, emails.update to another time, emails.cancel', async () => {
    const at = inAnHour();
    const sent = await resend.emails.send({
      from: 'Acme <hello@acme.test>',
      to: `delivered@${SIM}`,
      subject: 'Later',
      text: 'later',
      scheduledAt: at,
    });
    expect(sent.error).toBeNull();
    const id = sent.data!.id;
    expect((await resend.emails.get(id)).data).toMatchObject({ status: 'scheduled', send_at: at });
    const later = new Date(Date.parse(at) + 3600_000).toISOString();
    const updated = await resend.emails.update({ id, scheduledAt: later });
    expect(updated.error).toBeNull();
    expect((await resend.emails.get(id)).data).toMatchObject({ status: 'scheduled', send_at: later });
    const canceled = await resend.emails.cancel(id);
    expect(canceled.error).toBeNull();
    expect((await resend.emails.get(id)).data).toMatchObject({ status: 'canceled' });
  });

  it('scheduledAt in words, as Resend’s documentation writes it', async () => {
    const before = Date.now();
    const sent = await resend.emails.send({
      from: 'Acme <hello@acme.test>',
      to: `delivered@${SIM}`,
      subject: 'In a minute',
      text: 'soon',
      scheduledAt: 'in 1 min',
    });
    const after = Date.now();
    expect(sent.error).toBeNull();
    const email = (await resend.emails.get(sent.data!.id)).data as unknown as {
      status: string;
      send_at: string;
    };
    expect(email.status).toBe('scheduled');
    expect(Date.parse(email.send_at)).toBeGreaterThanOrEqual(before + 60_000);
    expect(Date.parse(email.send_at)).toBeLessThanOrEqual(after + 60_000);
  });

  it('emails.receiving: list, get, and its attachments, through the /emails/receiving alias', async () => {
    const raw = messageWithAttachment('Received through the SDK');
    const injected = await acme.test.post('/v1/emails/received', { raw });
    expect(injected.status).toBe(201);
    const id = injected.body.id;
    expect((await resend.emails.receiving.list()).data?.data.map((e) => e.id)).toContain(id);
    expect((await resend.emails.receiving.get(id)).data).toMatchObject({
      id,
      subject: 'Received through the SDK',
    });
    const attachments = await resend.emails.receiving.attachments.list({ emailId: id });
    expect(attachments.data?.data.map((a) => a.filename)).toEqual(['a.txt']);
    const attachment = await resend.emails.receiving.attachments.get({
      emailId: id,
      id: attachments.data!.data[0].id,
    });
    expect(attachment.data).toMatchObject({ filename: 'a.txt', download_url: expect.any(String) });
  });

  it('domains.create (in Resend’s EU region too), list, get, update, verify and remove', async () => {
    const created = await resend.domains.create({ name: 'acme-resend.test', region: 'eu-west-1' });
    expect(created.error).toBeNull();
    const id = created.data!.id;
    // Postline's statuses and fields, not Resend's (docs/resend.md).
    expect(created.data).toMatchObject({ name: 'acme-resend.test', status: 'pending' });
    expect((await resend.domains.list()).data?.data.map((d) => d.id)).toContain(id);
    expect((await resend.domains.get(id)).data).toMatchObject({ id, name: 'acme-resend.test', region: 'eu' });
    expect((await resend.domains.update({ id, openTracking: true, clickTracking: true })).error).toBeNull();
    expect((await resend.domains.get(id)).data).toMatchObject({ open_tracking: true, click_tracking: true });
    // Its records are looked up (none published here: the domain stays unverified).
    expect((await resend.domains.verify(id)).error).toBeNull();
    expect((await resend.domains.create({ name: 'us.test', region: 'us-east-1' })).error).toMatchObject({
      error: { message: expect.stringContaining('`region`: must be `eu`') },
    });
    expect((await resend.domains.remove(id)).error).toBeNull();
  });

  it('apiKeys.create, list and remove', async () => {
    const created = await resend.apiKeys.create({ name: 'ci' });
    expect(created.error).toBeNull();
    expect(created.data).toMatchObject({
      id: expect.stringMatching(/^key_/),
      // The secret is `key`, as the spec names it (Resend calls it `token`).
      key: expect.stringMatching(/^pk_test_/),
    });
    expect((await resend.apiKeys.list()).data?.data.map((k) => k.id)).toContain(created.data!.id);
    expect((await resend.apiKeys.remove(created.data!.id)).error).toBeNull();
  });

  it('audiences (Resend calls them segments): create, list, get, update, remove', async () => {
    // SDK 6 sends `resend.audiences.*` to `/segments`, Postline's alias of `/audiences` (docs/resend.md).
    expect(resend.audiences).toBe(resend.segments);
    const created = await resend.audiences.create({ name: 'Newsletter' });
    expect(created.error).toBeNull();
    const id = created.data!.id;
    expect(created.data).toMatchObject({ id: expect.stringMatching(/^aud_/), name: 'Newsletter' });
    expect((await resend.audiences.list()).data?.data.map((a) => a.id)).toContain(id);
    expect((await resend.audiences.get(id)).data).toMatchObject({ id, name: 'Newsletter', contacts: 0 });
    expect((await resend.segments.update(id, { name: 'Readers' })).error).toBeNull();
    expect((await acme.test.get(`/v1/audiences/${id}`)).body).toMatchObject({ name: 'Readers' });
    expect((await resend.audiences.remove(id)).error).toBeNull();
    expect((await acme.test.get(`/v1/audiences/${id}`)).status).toBe(404);
  });

  it('contacts: create (alone and in an audience), get, update, list (all and an audience), segments, remove', async () => {
    const audienceId = (await resend.audiences.create({ name: 'Members' })).data!.id;
    const alone = await resend.contacts.create({
      email: 'ada@example.com',
      firstName: 'Ada',
      lastName: 'Lovelace',
      unsubscribed: false,
    });
    expect(alone.error).toBeNull();
    const adaId = alone.data!.id;
    expect(adaId).toMatch(/^con_/);
    // `audienceId` posts to `/audiences/{id}/contacts`, Postline's alias for a contact created in that audience.
    const member = await resend.contacts.create({
      audienceId,
      email: 'grace@example.com',
      firstName: 'Grace',
    });
    expect(member.error).toBeNull();
    const graceId = member.data!.id;
    expect((await resend.contacts.get(graceId)).data).toMatchObject({
      email: 'grace@example.com',
      first_name: 'Grace',
      audience_ids: [audienceId],
    });
    expect((await resend.contacts.get({ id: adaId })).data).toMatchObject({ last_name: 'Lovelace' });

    const updated = await resend.contacts.update({ id: adaId, firstName: 'Augusta', unsubscribed: true });
    expect(updated.error).toBeNull();
    expect((await resend.contacts.get(adaId)).data).toMatchObject({
      first_name: 'Augusta',
      unsubscribed: true,
    });

    const all = await resend.contacts.list();
    expect(all.data?.data.map((c) => c.id)).toEqual(expect.arrayContaining([adaId, graceId]));
    // With `audienceId` the SDK lists `/segments/{id}/contacts`, an alias of `GET /v1/contacts?audience_id=`.
    const members = await resend.contacts.list({ audienceId });
    expect(members.error).toBeNull();
    expect(members.data?.data.map((c) => c.id)).toEqual([graceId]);

    expect(
      (await resend.contacts.segments.add({ contactId: adaId, segmentId: audienceId })).error,
    ).toBeNull();
    expect((await resend.contacts.list({ segmentId: audienceId })).data?.data.map((c) => c.id)).toEqual([
      graceId,
      adaId,
    ]);
    // Resend's cursors, `after` and `before`, page as `starting_after` and `ending_before` do.
    const page = async (options: { after: string } | { before: string } | object) =>
      (await resend.contacts.list({ segmentId: audienceId, limit: 1, ...options })).data?.data.map(
        (c) => c.id,
      );
    expect(await page({})).toEqual([graceId]);
    expect(await page({ after: graceId })).toEqual([adaId]);
    expect(await page({ before: adaId })).toEqual([graceId]);
    expect(
      (await resend.contacts.segments.remove({ contactId: adaId, segmentId: audienceId })).error,
    ).toBeNull();
    expect((await resend.contacts.get(adaId)).data).toMatchObject({ audience_ids: [] });

    // With `audienceId`, get and update answer for a member of the audience (by id or address); remove is
    // Postline's DELETE /audiences/{id}/contacts/{contact_id}: out of the audience, not deleted (docs/resend.md).
    expect((await resend.contacts.get({ email: 'grace@example.com', audienceId })).data).toMatchObject({
      id: graceId,
    });
    expect((await resend.contacts.update({ id: graceId, audienceId, firstName: 'G' })).error).toBeNull();
    expect((await resend.contacts.get(graceId)).data).toMatchObject({ first_name: 'G' });
    expect((await resend.contacts.remove({ id: graceId, audienceId })).error).toBeNull();
    expect((await resend.contacts.get(graceId)).data).toMatchObject({
      email: 'grace@example.com',
      audience_ids: [],
    });
    // No longer a member: not found there.
    expect((await resend.contacts.get({ id: graceId, audienceId })).error).toMatchObject({
      error: { code: 'not_found' },
    });
    expect((await resend.contacts.update({ id: graceId, audienceId, firstName: 'H' })).error).toMatchObject({
      error: { code: 'not_found' },
    });

    expect((await resend.contacts.remove(adaId)).error).toBeNull();
    expect((await resend.contacts.get(adaId)).error).toMatchObject({ error: { code: 'not_found' } });
    // By address, as Resend's SDK names a contact by its `email`: get, update, segments, remove.
    expect((await resend.contacts.get({ email: 'Grace@example.com' })).data).toMatchObject({ id: graceId });
    expect(
      (await resend.contacts.update({ email: 'grace@example.com', lastName: 'Hopper' })).error,
    ).toBeNull();
    expect((await resend.contacts.get(graceId)).data).toMatchObject({ last_name: 'Hopper' });
    expect(
      (await resend.contacts.segments.add({ email: 'grace@example.com', segmentId: audienceId })).error,
    ).toBeNull();
    expect((await resend.contacts.get(graceId)).data).toMatchObject({ audience_ids: [audienceId] });
    expect((await resend.contacts.remove({ email: 'grace@example.com' })).error).toBeNull();
    expect((await resend.contacts.get({ email: 'grace@example.com' })).error).toMatchObject({
      error: { code: 'not_found' },
    });
  });

  it('templates: create and publish in one chain, get, list, duplicate, remove; sends, with Resend’s variables', async () => {
    const created = await resend.templates
      .create({ name: 'Welcome', subject: 'Welcome', html: '<p>Welcome aboard</p>' })
      .publish();
    expect(created.error).toBeNull();
    const id = created.data!.id;
    expect((await resend.templates.get(id)).data).toMatchObject({ id, name: 'Welcome' });
    expect((await resend.templates.list()).data?.data.map((t) => t.id)).toContain(id);
    const copy = await resend.templates.duplicate(id);
    expect(copy.error).toBeNull();
    expect(copy.data!.id).not.toBe(id);
    const sent = await resend.emails.send({
      from: 'Acme <hello@acme.test>',
      to: `delivered@${SIM}`,
      template: { id },
    });
    expect(sent.error).toBeNull();
    expect((await resend.emails.get(sent.data!.id)).data).toMatchObject({
      subject: 'Welcome',
      html: '<p>Welcome aboard</p>',
    });
    expect((await resend.templates.remove(copy.data!.id)).error).toBeNull();
    // Resend's variables, `{ key, type, fallbackValue }`: one with a fallback renders it when not given, one
    // without is required, as in Resend.
    const resends = await resend.templates
      .create({
        name: 'Resend style',
        subject: 'Hi {{{NAME}}}',
        html: '<p>{{{NAME}}}, order {{{ORDER}}}</p>',
        variables: [
          { key: 'NAME', type: 'string', fallbackValue: 'there' },
          { key: 'ORDER', type: 'number' },
        ],
      })
      .publish();
    expect(resends.error).toBeNull();
    const variables = (await resend.templates.get(resends.data!.id)).data as unknown as {
      published: { variables: object[] };
    };
    expect(variables.published.variables).toEqual([
      { name: 'NAME', type: 'string', required: false, fallback: 'there' },
      { name: 'ORDER', type: 'number', required: true },
    ]);
    const send = (templateVariables: Record<string, string | number>) =>
      resend.emails.send({
        from: 'Acme <hello@acme.test>',
        to: `delivered@${SIM}`,
        template: { id: resends.data!.id, variables: templateVariables },
      });
    const fallen = await send({ ORDER: 7 });
    expect((await resend.emails.get(fallen.data!.id)).data).toMatchObject({
      subject: 'Hi there',
      html: '<p>there, order 7</p>',
    });
    const named = await send({ NAME: 'Ann', ORDER: 8 });
    expect((await resend.emails.get(named.data!.id)).data).toMatchObject({ subject: 'Hi Ann' });
    expect((await send({ NAME: 'Ann' })).error).toMatchObject({ error: { code: 'template_render_error' } });
  });

  it('topics: create, list, get, update, remove; a contact’s topics: update and list; a send with topicId', async () => {
    const created = await resend.topics.create({
      name: 'Product news',
      description: 'What is new',
      defaultSubscription: 'opt_in',
    });
    expect(created.error).toBeNull();
    const id = created.data!.id;
    expect((await resend.topics.list()).data?.data.map((t) => t.id)).toContain(id);
    expect((await resend.topics.get(id)).data).toMatchObject({ id, name: 'Product news' });
    // The SDK repeats the id in the body.
    expect((await resend.topics.update({ id, name: 'Product updates' })).error).toBeNull();
    expect((await resend.topics.get(id)).data).toMatchObject({ id, name: 'Product updates' });

    await resend.contacts.create({ email: 'topical@example.com' });
    const chosen = await resend.contacts.topics.update({
      email: 'topical@example.com',
      topics: [{ id, subscription: 'opt_out' }],
    });
    expect(chosen.error).toBeNull();
    const listed = await resend.contacts.topics.list({ email: 'topical@example.com' });
    expect((listed.data as unknown as { data: object[] }).data).toContainEqual(
      expect.objectContaining({ id, subscription: 'opt_out' }),
    );
    // A send about the topic leaves out the contact that opted out of it.
    const about = { from: 'Acme <news@acme.test>', subject: 'News', text: 'News', topicId: id };
    const sent = await resend.emails.send({ ...about, to: ['topical@example.com', `delivered@${SIM}`] });
    expect(sent.error).toBeNull();
    // Left with one address, it carries the topic's one-click unsubscribe (Resend adds none).
    expect((await resend.emails.get(sent.data!.id)).data).toMatchObject({
      to: [`delivered@${SIM}`],
      topic_id: id,
      headers: {
        'List-Unsubscribe': expect.stringMatching(
          /^<http:\/\/[^>]+\/unsubscribe\/em_[0-9a-z]+-[0-9a-z]{16}>, <mailto:/,
        ),
        'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      },
    });
    const none = await resend.emails.send({ ...about, to: 'topical@example.com' });
    expect(none.error).toMatchObject({ error: { code: 'all_recipients_unsubscribed' } });
    expect((await resend.topics.remove(id)).error).toBeNull();
  });

  it('broadcasts: create as Resend’s example does, with segmentId, no name and its placeholders', async () => {
    const audienceId = (await resend.audiences.create({ name: 'Segment readers' })).data!.id;
    const created = await resend.broadcasts.create({
      segmentId: audienceId,
      from: 'Acme <news@acme.test>',
      subject: 'hello world',
      html: 'Hi {{{FIRST_NAME|there}}}, you can unsubscribe here: {{{RESEND_UNSUBSCRIBE_URL}}}',
    });
    expect(created.error).toBeNull();
    expect((await resend.broadcasts.get(created.data!.id)).data).toMatchObject({
      audience_id: audienceId,
      name: 'Untitled',
      html: 'Hi {{#if contact.first_name}}{{contact.first_name}}{{else}}there{{/if}}, you can unsubscribe here: {{unsubscribe_url}}',
    });
    // Created and scheduled in one call.
    const scheduled = await resend.broadcasts.create({
      segmentId: audienceId,
      from: 'Acme <news@acme.test>',
      subject: 'Later',
      html: '<p>Later</p>',
      previewText: 'What is coming',
      send: true,
      scheduledAt: 'in 1 hour',
    });
    expect(scheduled.error).toBeNull();
    expect((await resend.broadcasts.get(scheduled.data!.id)).data).toMatchObject({
      status: 'scheduled',
      preview_text: 'What is coming',
    });
    const copy = await resend.broadcasts.duplicate(scheduled.data!.id);
    expect(copy.error).toBeNull();
    expect((await resend.broadcasts.get(copy.data!.id)).data).toMatchObject({
      status: 'draft',
      name: 'Copy of Untitled',
      subject: 'Later',
    });
  });

  it('broadcasts: create, get, list, update, send with scheduledAt, cancel; remove a draft; send now; recipients, clickedLinks', async () => {
    const audienceId = (await resend.audiences.create({ name: 'Broadcast readers' })).data!.id;
    await resend.contacts.create({ audienceId, email: `delivered@${SIM}`, firstName: 'Dee' });
    const draft = {
      audienceId,
      name: 'September news',
      from: 'Acme <news@acme.test>',
      subject: 'September',
      html: '<p>Hello {{contact.first_name}}</p>',
    };
    const created = await resend.broadcasts.create(draft);
    expect(created.error).toBeNull();
    const id = created.data!.id;
    expect(id).toMatch(/^bc_/);
    expect((await resend.broadcasts.get(id)).data).toMatchObject({
      id,
      status: 'draft',
      audience_id: audienceId,
    });
    expect((await resend.broadcasts.list()).data?.data.map((b) => b.id)).toContain(id);
    const updated = await resend.broadcasts.update(id, {
      subject: 'September, again',
      replyTo: ['hi@acme.test'],
    });
    expect(updated.error).toBeNull();
    expect((await resend.broadcasts.get(id)).data).toMatchObject({
      subject: 'September, again',
      reply_to: ['hi@acme.test'],
    });

    const at = inAnHour();
    const scheduled = await resend.broadcasts.send(id, { scheduledAt: at });
    expect(scheduled.error).toBeNull();
    expect((await resend.broadcasts.get(id)).data).toMatchObject({ status: 'scheduled', send_at: at });
    // Canceled before its time, a scheduled broadcast is a draft again (Resend's "scheduled -> draft").
    expect((await resend.broadcasts.cancel(id)).error).toBeNull();
    expect((await resend.broadcasts.get(id)).data).toMatchObject({ status: 'draft', send_at: null });
    expect((await resend.broadcasts.send(id, { scheduledAt: inAnHour() })).error).toBeNull();
    // Only a draft is sent: Postline's 409 comes back as the SDK's error.
    expect((await resend.broadcasts.send(id)).error).toMatchObject({
      error: { code: 'broadcast_not_draft' },
    });

    const other = (await resend.broadcasts.create(draft)).data!.id;
    expect((await resend.broadcasts.remove(other)).error).toBeNull();
    expect((await resend.broadcasts.get(other)).error).toMatchObject({ error: { code: 'not_found' } });

    const now = (await resend.broadcasts.create(draft)).data!.id;
    const sent = await resend.broadcasts.send(now);
    expect(sent.error).toBeNull();
    expect(sent.data).toMatchObject({ id: now });
    expect((await resend.broadcasts.get(now)).data?.status).toMatch(/^(sending|sent)$/);
    // Its recipients and clicked links (what they hold: broadcast-recipients.test.ts).
    const delivered = await resend.broadcasts.recipients(now, { type: 'bounced', bounceType: 'permanent' });
    expect(delivered.error).toBeNull();
    expect(delivered.data).toMatchObject({ object: 'list', data: [], has_more: false });
    const links = await resend.broadcasts.clickedLinks(now, { limit: 10 });
    expect(links.error).toBeNull();
    expect(links.data).toMatchObject({ object: 'list', data: [], has_more: false });
  });

  it('refuses what it does not take (the "not compatible" list of docs/resend.md) with a 422, never silently', async () => {
    const audienceId = (await resend.audiences.create({ name: 'Refusals' })).data!.id;
    const refused = (r: { error: unknown }, field: string) =>
      expect(r.error).toMatchObject({
        error: { code: 'validation_error', message: expect.stringContaining(field) },
      });
    // Resend's newer name for `audienceId`, `segmentId`, beside it: which one counts would be a guess.
    refused(
      await resend.broadcasts.create({
        audienceId,
        segmentId: audienceId,
        name: 'n',
        from: 'Acme <news@acme.test>',
        subject: 's',
        html: '<p>h</p>',
      }),
      'segment_id',
    );
  });

  it("gives Postline's error shape back as the SDK's error", async () => {
    const refused = await resend.emails.send({
      from: 'not an address',
      to: `delivered@${SIM}`,
      subject: 's',
      text: 't',
    });
    expect(refused.data).toBeNull();
    expect(refused.error).toMatchObject({ error: { type: 'validation_error', code: 'validation_error' } });
  });
});
