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
 * A send about a topic to one address carries Postline's one-click unsubscribe from the topic (docs/emails.md,
 * "Topics"), through the API and the SMTP relay, delivered live by the MTA to a real SMTP server on loopback; the
 * recipient leaves by the link (RFC 8058) or by the mailto sent to Postline's MX, and the next send about the
 * topic leaves the address out, whether it was a contact or not.
 */

let acme: TestOrg;
let topic: string;
const live = useLiveService({
  env: { SMTP_MX_PORT: '0', SMTP_SUBMISSION_PORT: '0', SMTP_ALLOW_INSECURE_AUTH: 'true' },
});
const { svc } = live;
beforeAll(async () => {
  acme = await svc.createOrg('pro');
  await addVerifiedDomain(acme.live, live.dns, 'acme-news.test');
  topic = (await acme.live.post('/v1/topics', { name: 'Product news', default_subscription: 'opt_in' })).body
    .id;
  await live.receiver.subscribe(acme.live, ['contact.unsubscribed']);
});

const FROM = 'Acme News <news@acme-news.test>';
const send = (body: Record<string, unknown>) =>
  acme.live.post('/v1/emails', { from: FROM, subject: 'What is new', text: 'News', ...body });
/** Sends and returns the message the receiving server got for it, for `rcpt`. */
async function delivered(sending: () => Promise<unknown>, rcpt: string) {
  await sending();
  const message = await until(
    async () => live.sink.messages.find((m) => m.rcptTo.includes(rcpt)),
    (m) => m !== undefined,
  );
  return { message: message!, headers: parseMime(message!.raw).headers };
}
const unsubscribeLinks = (header: string | undefined) => {
  const [, url, mailto] = /^<(http[^>]+)>, <mailto:([^>]+)>$/.exec(header ?? '') ?? [];
  return { url: url?.replace(/^http:\/\/[^/]+/, svc.baseUrl), mailto };
};
const topicsOf = async (contactId: string) =>
  (await acme.live.get(`/v1/contacts/${contactId}/topics`)).body.data.find((t: any) => t.id === topic)
    ?.subscription;
const contactIdOf = async (email: string) =>
  (await acme.live.get(`/v1/contacts?email=${encodeURIComponent(email)}`)).body.data[0]?.id as
    | string
    | undefined;

describe('a send about a topic to one address', () => {
  it('carries the one-click link, DKIM-signed; POST takes the contact out of the topic, and the next send leaves it out', async () => {
    const ann = (await acme.live.post('/v1/contacts', { email: 'ann@rcpt.test', first_name: 'Ann' })).body.id;
    let id = '';
    const { message, headers } = await delivered(async () => {
      const r = await send({ to: 'Ann <ann@rcpt.test>', topic_id: topic });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      id = r.body.id;
    }, 'ann@rcpt.test');
    expect(headers.get('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
    const { url, mailto } = unsubscribeLinks(headers.get('list-unsubscribe'));
    expect(url).toMatch(new RegExp(`/unsubscribe/${id}-[0-9a-z]{16}$`));
    expect(mailto).toMatch(new RegExp(`^unsubscribe\\+${id}-[0-9a-z]{16}@bounces\\.acme-news\\.test$`));
    // The email shows them as it was sent.
    expect((await acme.live.get(`/v1/emails/${id}`)).body.headers).toEqual({
      'List-Unsubscribe': headers.get('list-unsubscribe'),
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    });
    const dkim = await verifyDkim(live.dns, message.raw);
    expect(dkim.results[0].status.result).toBe('pass');
    const signed = signedHeaders(dkim.results[0]);
    expect(signed).toEqual(expect.arrayContaining(['list-unsubscribe', 'list-unsubscribe-post']));

    // The page names the topic and the address, masked, and changes nothing by itself.
    const page = await (await fetch(url)).text();
    expect(page).toContain('Stop receiving emails about “Product news”?');
    expect(page).toContain('a***@rcpt.test');
    expect(await topicsOf(ann)).toBe('opt_in');

    const post = await oneClick(url);
    expect(post.status).toBe(200);
    expect(await post.text()).toContain('You will no longer receive emails about “Product news”.');
    expect(
      await until(
        () => topicsOf(ann),
        (s) => s === 'opt_out',
      ),
    ).toBe('opt_out');
    expect((await acme.live.get(`/v1/contacts/${ann}`)).body.unsubscribed).toBe(false);
    const [hook] = await until(
      async () => live.receiver.received.filter((r) => r.payload.data.contact_id === ann),
      (hooks) => hooks.length > 0,
    );
    expect(hook.payload).toMatchObject({
      type: 'contact.unsubscribed',
      data: { contact_id: ann, topic_id: topic, broadcast_id: null, email_id: id },
    });
    const again = await send({ to: 'ann@rcpt.test', topic_id: topic });
    expect(again.status).toBe(422);
    expect(again.body.error.code).toBe('all_recipients_unsubscribed');
  });

  it('over the relay: added to the message’s own bytes; the mailto makes an address that was no contact one that is out of the topic', async () => {
    const relay = nodemailer.createTransport({
      host: '127.0.0.1',
      port: svc.postline.smtp!.submissionPort!,
      secure: false,
      ignoreTLS: true,
      auth: { user: 'postline', pass: acme.liveKey },
    });
    const { message, headers } = await delivered(
      () =>
        relay.sendMail({
          from: FROM,
          to: 'zoe@rcpt.test',
          subject: 'Relayed news',
          text: 'Kept as it was written.',
          headers: { 'X-Postline-Topic': topic, 'X-Mailer': 'Relay test' },
        }),
      'zoe@rcpt.test',
    );
    const { mailto } = unsubscribeLinks(headers.get('list-unsubscribe'));
    expect(mailto).toMatch(/^unsubscribe\+em_[0-9a-z]+-[0-9a-z]{16}@bounces\.acme-news\.test$/);
    expect(headers.get('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
    expect(headers.get('x-mailer')).toBe('Relay test');
    expect(headers.get('x-postline-topic')).toBeUndefined();
    expect(message.raw.toString()).toContain('Kept as it was written.');
    expect(await contactIdOf('zoe@rcpt.test')).toBeUndefined();

    // What a mail client sends for it: the bounce domain's MX is Postline's.
    const mx = nodemailer.createTransport({
      host: '127.0.0.1',
      port: svc.postline.smtp!.mxPort!,
      secure: false,
      ignoreTLS: true,
    });
    await mx.sendMail({ from: 'zoe@rcpt.test', to: mailto, subject: 'unsubscribe', text: 'unsubscribe' });
    const zoe = await until(
      () => contactIdOf('zoe@rcpt.test'),
      (c) => c !== undefined,
    );
    expect(
      await until(
        () => topicsOf(zoe!),
        (s) => s === 'opt_out',
      ),
    ).toBe('opt_out');
    const again = await send({ to: 'zoe@rcpt.test', topic_id: topic });
    expect(again.status).toBe(422);
    expect(again.body.error.code).toBe('all_recipients_unsubscribed');
    // Other emails still reach the address.
    expect((await send({ to: 'zoe@rcpt.test' })).status).toBe(200);
  });

  it('carries none when the email has several recipients, or when the sender gave its own', async () => {
    const several = await delivered(
      () => send({ to: ['cy@rcpt.test'], bcc: ['di@rcpt.test'], topic_id: topic }),
      'cy@rcpt.test',
    );
    expect(several.headers.get('list-unsubscribe')).toBeUndefined();
    const own = '<https://acme-news.test/leave?u=ed>';
    const theirs = await delivered(
      () => send({ to: 'ed@rcpt.test', topic_id: topic, headers: { 'list-unsubscribe': own } }),
      'ed@rcpt.test',
    );
    expect(theirs.headers.get('list-unsubscribe')).toBe(own);
    expect(theirs.headers.get('list-unsubscribe-post')).toBeUndefined();
    const none = await delivered(() => send({ to: 'fay@rcpt.test' }), 'fay@rcpt.test');
    expect(none.headers.get('list-unsubscribe')).toBeUndefined();
  });
});
