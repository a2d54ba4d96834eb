import { beforeAll, describe, expect, it } from 'vitest';
import { broadcastsProjection } from '../../projections/broadcasts.projection.ts';
import { emailUnsubscribesProjection } from '../../projections/email-unsubscribes.projection.ts';
import { rebuildProjection } from '../../projections/rebuild.ts';
import { PATIENCE } from '../support/patience.ts';
import type { ApiResponse } from '../support/service.ts';
import { useTwoOrgs } from '../support/service.ts';
import { postForm, unsubscribeLink } from '../support/unsubscribe-links.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * What a broadcast's unsubscribe link leads to, as its counts and webhooks tell it: an unsubscribe by the one-click
 * button or by the page's preferences form is the broadcast's, and each contact counts once per broadcast
 * (docs/broadcasts.md, Progress and counts).
 */
const { svc, orgs } = useTwoOrgs(() => ({
  processes: true,
  env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' },
}));
let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startWebhookReceiver();
  await receiver.subscribe(orgs.acme.test, ['contact.unsubscribed']);
  return () => receiver.close();
});

const ok = (r: ApiResponse, status = 200) => {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
};
const client = () => orgs.acme.test;
const settled = async (...names: string[]) => {
  const { store, readYourWrites } = svc.postline.services;
  await readYourWrites.waitFor(names, await store.headPosition({ committed: true }));
};
const topic = async (name: string) =>
  ok(await client().post('/v1/topics', { name, default_subscription: 'opt_in' }), 201).id as string;

/** A broadcast (without a topic) sent to new contacts of a new audience; each contact's unsubscribe URL. */
async function sentTo(...emails: string[]) {
  const aud = ok(await client().post('/v1/audiences', { name: 'Readers' }), 201).id;
  const contactIds: string[] = [];
  for (const email of emails)
    contactIds.push(ok(await client().post('/v1/contacts', { email, audience_ids: [aud] }), 201).id);
  const b = ok(
    await client().post('/v1/broadcasts', {
      name: 'News',
      audience_id: aud,
      from: 'Acme <news@acme.test>',
      subject: 'Hello',
      text: 'Hi',
    }),
    201,
  );
  ok(await client().post(`/v1/broadcasts/${b.id}/send`, {}));
  const emailsOf = async () =>
    (
      await svc.postline.services.db.query<{ id: string }>('SELECT id FROM emails WHERE broadcast_id = $1', [
        b.id,
      ])
    ).rows;
  await expect.poll(async () => (await emailsOf()).length, PATIENCE).toBe(emails.length);
  const urls = new Map<string, string>();
  for (const { id } of await emailsOf()) {
    const sent = ok(await client().get(`/v1/emails/${id}`));
    urls.set(sent.to[0], unsubscribeLink(sent.headers, svc.baseUrl));
  }
  return { broadcastId: b.id as string, contactIds, urls: emails.map((e) => urls.get(e)!) };
}

const unsubscribedCount = async (broadcastId: string) => {
  await settled('broadcasts');
  return ok(await client().get(`/v1/broadcasts/${broadcastId}`)).counts.unsubscribed;
};
/** The `contact.unsubscribed` deliveries for the contact, as `[topic_id, broadcast_id, email_id]`, in any order. */
const hooksOf = (contactId: string) =>
  receiver
    .ofType('contact.unsubscribed')
    .filter((r) => r.payload.data.contact_id === contactId)
    .map((r) => [r.payload.data.topic_id, r.payload.data.broadcast_id, r.payload.data.email_id])
    .sort();
/** The email an unsubscribe link is of: its token starts with the email's id. */
const emailOf = (url: string) => /\/unsubscribe\/(em_[0-9a-z]+)-/.exec(url)![1];

describe('unsubscribing through the page’s preferences form', () => {
  it('is the broadcast’s: counted in its counts, and named in the webhook', async () => {
    const tips = await topic('Tips');
    const deals = await topic('Deals');
    const { broadcastId, contactIds, urls } = await sentTo('pref.leaver@example.org');
    const page = await (await fetch(urls[0])).text();
    expect(page).toContain(`value="${tips}" checked`);
    // Leaves Tips, keeps Deals.
    const r = await postForm(urls[0], `action=preferences&topic=${deals}`);
    expect(r.status).toBe(200);
    expect(await r.text()).toContain('Preferences saved');
    await settled('contacts');
    const topics = ok(await client().get(`/v1/contacts/${contactIds[0]}/topics`)).data;
    expect(topics.find((t: any) => t.id === tips).subscription).toBe('opt_out');
    expect(topics.find((t: any) => t.id === deals).subscription).toBe('opt_in');

    expect(await unsubscribedCount(broadcastId)).toBe(1);
    await expect
      .poll(() => hooksOf(contactIds[0]), PATIENCE)
      .toEqual([[tips, broadcastId, emailOf(urls[0])]]);
  });
});

describe('counts.unsubscribed of a broadcast', () => {
  it('counts each contact once, however often it leaves by the link', async () => {
    const news = await topic('Weekly');
    const { broadcastId, contactIds, urls } = await sentTo('twice@example.org', 'once@example.org');
    const [twice, once] = contactIds;

    expect((await postForm(urls[0], 'List-Unsubscribe=One-Click')).status).toBe(200);
    ok(await client().patch(`/v1/contacts/${twice}`, { unsubscribed: false }));
    expect((await postForm(urls[0], 'List-Unsubscribe=One-Click')).status).toBe(200);
    // Then leaves every topic at once through the form (Weekly and any other): still the same contact.
    await settled('contacts');
    const topics = ok(await client().get(`/v1/contacts/${twice}/topics`)).data.map((t: any) => t.id);
    expect(topics).toContain(news);
    expect((await postForm(urls[0], 'action=preferences')).status).toBe(200);
    const by = [broadcastId, emailOf(urls[0])];
    const everyUse = [[null, ...by], [null, ...by], ...topics.map((t: string) => [t, ...by])];
    await expect.poll(() => hooksOf(twice), PATIENCE).toEqual(everyUse.sort());
    expect(await unsubscribedCount(broadcastId)).toBe(1);

    expect((await postForm(urls[1], 'List-Unsubscribe=One-Click')).status).toBe(200);
    expect(await unsubscribedCount(broadcastId)).toBe(2);
    await expect.poll(() => hooksOf(once), PATIENCE).toEqual([[null, broadcastId, emailOf(urls[1])]]);
  });

  it('comes out the same when the read model is rebuilt from the log', async () => {
    const { broadcastId, contactIds, urls } = await sentTo('rebuilt@example.org');
    expect((await postForm(urls[0], 'List-Unsubscribe=One-Click')).status).toBe(200);
    ok(await client().patch(`/v1/contacts/${contactIds[0]}`, { unsubscribed: false }));
    expect((await postForm(urls[0], 'List-Unsubscribe=One-Click')).status).toBe(200);
    expect(await unsubscribedCount(broadcastId)).toBe(1);
    // The metrics count the email once too.
    const emailMetric = async () => {
      await settled('email-unsubscribes');
      return ok(await client().get(`/v1/emails/metrics?email_id=${emailOf(urls[0])}&metrics=unsubscribed`))
        .totals;
    };
    expect(await emailMetric()).toEqual({ unsubscribed: 1 });
    const { db, store, log } = svc.postline.services;
    await rebuildProjection(db, store, broadcastsProjection, log);
    await rebuildProjection(db, store, emailUnsubscribesProjection, log);
    expect(await unsubscribedCount(broadcastId)).toBe(1);
    expect(await emailMetric()).toEqual({ unsubscribed: 1 });
  });
});
