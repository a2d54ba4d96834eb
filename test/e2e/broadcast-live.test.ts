import nodemailer from 'nodemailer';
import { beforeAll, describe, expect, it } from 'vitest';
import { signedHeaders, verifyDkim } from '../support/dkim.ts';
import { addVerifiedDomain } from '../support/domains.ts';
import { useLiveService } from '../support/live-service.ts';
import { parseMime } from '../support/mime.ts';
import { until } from '../support/patience.ts';
import type { TestOrg } from '../support/service.ts';
import { oneClick } from '../support/unsubscribe-links.ts';

/**
 * A broadcast as a user sends one, with every process of `npm start` running: a live key, a verified domain with
 * its impressum, an audience of four contacts of whom only one may receive it, delivery by the MTA to a real SMTP
 * server on loopback, and the recipient unsubscribing by the link (RFC 8058) and by the List-Unsubscribe mailto,
 * sent to Postline's own MX.
 */

let acme: TestOrg;
const live = useLiveService({ env: { SMTP_MX_PORT: '0' } });
const { svc } = live;
beforeAll(async () => {
  acme = await svc.createOrg('pro');
  const domain = await addVerifiedDomain(acme.live, live.dns, 'acme-news.test');
  const impressum = {
    company_name: 'Acme News GmbH',
    address: 'Hauptstraße 1, 10115 Berlin',
    country: 'DE',
    email: 'legal@acme-news.test',
  };
  expect((await acme.live.patch(`/v1/domains/${domain.id}`, { impressum })).status).toBe(200);
  await live.receiver.subscribe(acme.live, ['contact.unsubscribed']);
});

const created = async (path: string, body: unknown) => {
  const r = await acme.live.post(path, body);
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.id as string;
};
const contact = async (id: string) => (await acme.live.get(`/v1/contacts/${id}`)).body;
/** The link as the recipient's mail client has it, on the port this service listens on (PUBLIC_URL names 0). */
const reachable = (url: string) => url.replace(/^http:\/\/[^/]+/, svc.baseUrl);
/** The contact.unsubscribed deliveries for `contactId` so far. */
const unsubscribedHooks = (contactId: string) =>
  live.receiver.received.filter((r) => r.payload.data.contact_id === contactId);

/** Sends a live broadcast to `audience` and returns the one message the receiving server got for it. */
async function sendBroadcast(audience: string, topic: string | null) {
  const id = await created('/v1/broadcasts', {
    name: 'Autumn',
    audience_id: audience,
    ...(topic && { topic_id: topic }),
    from: 'Acme News <news@acme-news.test>',
    subject: 'Autumn news for {{contact.first_name}}',
    html: '<html><body><p>Hello {{contact.first_name}}, your plan: {{contact.properties.plan}}</p></body></html>',
    text: 'Hello {{contact.first_name}}',
  });
  live.sink.reset();
  const sent = await acme.live.post(`/v1/broadcasts/${id}/send`, {});
  expect(sent.body.status, JSON.stringify(sent.body)).toBe('sending');
  const [message] = await live.sink.waitForMessages(1);
  const broadcast = await until(
    async () => (await acme.live.get(`/v1/broadcasts/${id}`)).body,
    (b) => b.status === 'sent' && b.counts.delivered === 1,
  );
  return { id, message, broadcast };
}

describe('a live broadcast, end to end', () => {
  it('reaches only who may receive it, personalised, DKIM-signed over both unsubscribe headers; POST unsubscribes, GET does not', async () => {
    const topic = await created('/v1/topics', { name: 'Autumn news', default_subscription: 'opt_in' });
    const audience = await created('/v1/audiences', { name: 'Readers' });
    const ann = await created('/v1/contacts', {
      email: 'ann@rcpt.test',
      first_name: 'Ann',
      properties: { plan: 'gold' },
      audience_ids: [audience],
    });
    await created('/v1/contacts', { email: 'gone@rcpt.test', unsubscribed: true, audience_ids: [audience] });
    await created('/v1/contacts', { email: 'bounced@rcpt.test', audience_ids: [audience] });
    await created('/v1/suppressions', { email: 'bounced@rcpt.test' });
    const out = await created('/v1/contacts', { email: 'out@rcpt.test', audience_ids: [audience] });
    await acme.live.patch(`/v1/contacts/${out}/topics`, [{ topic_id: topic, subscription: 'opt_out' }]);

    const { message, broadcast } = await sendBroadcast(audience, topic);
    expect(broadcast.counts).toMatchObject({ recipients: 1, sent: 1, delivered: 1, bounced: 0 });
    expect(broadcast.progress.skipped).toMatchObject({ unsubscribed: 1, suppressed: 1, not_subscribed: 1 });
    expect(live.sink.messages.flatMap((m) => m.rcptTo)).toEqual(['ann@rcpt.test']);

    const parsed = parseMime(message.raw);
    const header = (name: string) => parsed.headers.get(name);
    expect(header('to')).toBe('Ann <ann@rcpt.test>');
    expect(header('subject')).toBe('Autumn news for Ann');
    expect(header('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
    const [, url, mailto] = /^<(http[^>]+)>, <mailto:([^>]+)>$/.exec(header('list-unsubscribe') ?? '') ?? [];
    expect(url).toMatch(/\/unsubscribe\/em_[0-9a-z]+-[0-9a-z]{16}$/);
    expect(mailto).toMatch(/^unsubscribe\+em_[0-9a-z]+-[0-9a-z]{16}@bounces\.acme-news\.test$/);
    const html = parsed.parts.find((p) => p.contentType === 'text/html')!.body.toString();
    expect(html).toContain('Hello Ann, your plan: gold');
    expect(html).toContain('Acme News GmbH<br>Hauptstraße 1, 10115 Berlin, DE<br>legal@acme-news.test');
    expect(html).toContain(`<a href="${url}" data-postline-untracked>Unsubscribe</a>`);

    const dkim = await verifyDkim(live.dns, message.raw);
    expect(dkim.results[0].status.result).toBe('pass');
    expect(dkim.results[0].signingDomain).toBe('acme-news.test');
    const signed = signedHeaders(dkim.results[0]);
    expect(signed).toEqual(expect.arrayContaining(['list-unsubscribe', 'list-unsubscribe-post']));

    // A link scanner fetching the URL changes nothing.
    const page = await fetch(reachable(url));
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Stop receiving emails about “Autumn news”?');
    const topicOf = async () =>
      (await acme.live.get(`/v1/contacts/${ann}/topics`)).body.data.find((t: any) => t.id === topic)
        .subscription;
    expect(await topicOf()).toBe('opt_in');
    expect(unsubscribedHooks(ann)).toEqual([]);

    // The mailbox provider's one-click button.
    const post = await oneClick(reachable(url));
    expect(post.status).toBe(200);
    const [hook] = await until(
      async () => unsubscribedHooks(ann),
      (hooks) => hooks.length > 0,
    );
    expect(hook.verifiedWith).toHaveLength(1);
    expect(hook.payload).toMatchObject({
      type: 'contact.unsubscribed',
      data: {
        contact_id: ann,
        topic_id: topic,
        broadcast_id: broadcast.id,
        email_id: /\/unsubscribe\/(em_[0-9a-z]+)-/.exec(url)![1],
      },
    });
    expect(await until(topicOf, (s) => s === 'opt_out')).toBe('opt_out');
    expect((await contact(ann)).unsubscribed).toBe(false);
    await until(
      async () => (await acme.live.get(`/v1/broadcasts/${broadcast.id}`)).body.counts.unsubscribed,
      (n) => n === 1,
    );
  });

  it('unsubscribes from everything by the mailto, sent to Postline’s MX', async () => {
    const audience = await created('/v1/audiences', { name: 'Everyone' });
    const bob = await created('/v1/contacts', {
      email: 'bob@rcpt.test',
      first_name: 'Bob',
      audience_ids: [audience],
    });
    const { message, broadcast } = await sendBroadcast(audience, null);
    const mailto = /<mailto:([^>]+)>/.exec(parseMime(message.raw).headers.get('list-unsubscribe') ?? '')![1];

    // What a mail client sends for it (the MX of bounces.acme-news.test is Postline's).
    const client = nodemailer.createTransport({
      host: '127.0.0.1',
      port: svc.postline.smtp!.mxPort!,
      secure: false,
      ignoreTLS: true,
    });
    await client.sendMail({ from: 'bob@rcpt.test', to: mailto, subject: 'unsubscribe', text: 'unsubscribe' });
    expect(
      (
        await until(
          () => contact(bob),
          (c) => c.unsubscribed,
        )
      ).unsubscribed,
    ).toBe(true);
    const [hook] = await until(
      async () => unsubscribedHooks(bob),
      (hooks) => hooks.length > 0,
    );
    expect(hook.payload).toMatchObject({
      type: 'contact.unsubscribed',
      data: { contact_id: bob, topic_id: null, broadcast_id: broadcast.id, email_id: expect.any(String) },
    });
    // A forged token is refused at RCPT.
    const forged = mailto.replace(/-[0-9a-z]{16}@/, '-0000000000000000@');
    await expect(client.sendMail({ from: 'x@rcpt.test', to: forged, text: 'x' })).rejects.toMatchObject({
      responseCode: 550,
    });
  });
});
