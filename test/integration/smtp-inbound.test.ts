import { generateKeyPairSync } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { dkimSign } from 'mailauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIME_CORPUS } from '../fixtures/mime-corpus.ts';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain } from '../support/domains.ts';
import { mxClient, receivedWithSubject } from '../support/inbound.ts';
import { PATIENCE } from '../support/patience.ts';
import { rawSmtp } from '../support/raw-smtp.ts';
import type { TestOrg } from '../support/service.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * Inbound mail as `npm start` receives it: a domain with inbound enabled and its records verified on a loopback
 * DNS server takes mail through the MX port; the API lists it and the webhook tells of it.
 */

let receiver: WebhookReceiver;
let acme: TestOrg;
let mxPort: number;
const DOMAIN = 'acme-in.test';
const dkim = generateKeyPairSync('rsa', { modulusLength: 2048 });
const dkimPrivateKey = dkim.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;

const { svc, dns } = useDnsService({ processes: true, env: { SMTP_MX_PORT: '0' } });
beforeAll(async () => {
  receiver = await startWebhookReceiver();
  // The remote sender's own records: SPF allows loopback, its DKIM key, a DMARC policy.
  dns.set('remote.test', 'TXT', [['v=spf1 ip4:127.0.0.1 -all']]);
  // A TXT string holds at most 255 bytes: the key's record is published in pieces, as DNS providers do.
  const key = `v=DKIM1; k=rsa; p=${dkim.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;
  dns.set('sel._domainkey.remote.test', 'TXT', [key.match(/.{1,250}/g)!]);
  dns.set('_dmarc.remote.test', 'TXT', [['v=DMARC1; p=reject']]);
  // A sender that asks for strict alignment, mailing from a subdomain of its own: SPF and DKIM pass for
  // mail.strict.test, which does not align with strict.test under adkim=s and aspf=s.
  dns.set('mail.strict.test', 'TXT', [['v=spf1 ip4:127.0.0.1 -all']]);
  dns.set('sel._domainkey.mail.strict.test', 'TXT', [key.match(/.{1,250}/g)!]);
  dns.set('_dmarc.strict.test', 'TXT', [['v=DMARC1; p=reject; adkim=s; aspf=s']]);
});
beforeAll(async () => {
  mxPort = svc.postline.smtp!.mxPort!;
  acme = await svc.createOrg('pro');
  await addVerifiedDomain(acme.live, dns, DOMAIN, { inbound_enabled: true });
  await addVerifiedDomain(acme.live, dns, 'acme-out.test');
  await receiver.subscribe(acme.live, ['email.received']);
});
afterAll(async () => {
  await receiver?.close();
});

const mx = () => mxClient(mxPort);

/** A download link, on the test service's own address (PUBLIC_URL names no port here). */
const local = (link: string) => {
  const url = new URL(link);
  return `${svc.baseUrl}${url.pathname}${url.search}`;
};

/** Read models and webhooks follow the MX's 250 by a moment: waited for. */
const POLL = PATIENCE;

const receivedWith = (subject: string) => receivedWithSubject(acme.live, subject);

/** remote.test's DKIM-Signature field for `message`, signed with `options` (an algorithm, a body length). */
async function remoteSignature(message: string, options: Record<string, unknown>): Promise<string> {
  const { signatures, errors } = await dkimSign(message, {
    signTime: new Date(),
    signatureData: [
      { signingDomain: 'remote.test', selector: 'sel', privateKey: dkimPrivateKey, ...options },
    ],
  } as unknown as Parameters<typeof dkimSign>[1]);
  expect(errors).toEqual([]);
  return signatures;
}

/** `raw` through the MX from an envelope sender without SPF: DMARC has only the signatures to go by. */
const sentWithoutSpf = (raw: string) =>
  mx().sendMail({ envelope: { from: 'bounce@unknown-sender.test', to: [`support@${DOMAIN}`] }, raw });

describe('mail for an inbound domain', () => {
  it('is received with every field, its attachment downloads, and a signed email.received arrives', async () => {
    const info = await mx().sendMail({
      envelope: { from: 'ann@remote.test', to: [`support@${DOMAIN}`] },
      from: 'Ann Example <ann@remote.test>',
      to: `Support <support@${DOMAIN}>`,
      cc: `cc@${DOMAIN}`,
      replyTo: 'ann.reply@remote.test',
      subject: 'Order 42',
      text: 'Where is my order?',
      html: '<p>Where is my order?</p>',
      inReplyTo: '<earlier@acme-in.test>',
      attachments: [{ filename: 'receipt.txt', content: 'paid 42 EUR', contentType: 'text/plain' }],
      dkim: {
        domainName: 'remote.test',
        keySelector: 'sel',
        privateKey: dkimPrivateKey,
      },
    });
    expect(info.response).toBe('250 2.0.0 Ok: received');

    const listed = await receivedWith('Order 42');
    expect(listed).toMatchObject({
      object: 'received_email',
      from: { email: 'ann@remote.test', name: 'Ann Example' },
      to: [{ email: `support@${DOMAIN}`, name: 'Support' }],
      cc: [{ email: `cc@${DOMAIN}`, name: null }],
      reply_to: [{ email: 'ann.reply@remote.test', name: null }],
      subject: 'Order 42',
      text_body: 'Where is my order?',
      html_body: '<p>Where is my order?</p>',
      in_reply_to: '<earlier@acme-in.test>',
      message_id: expect.stringMatching(/^<.+>$/),
      attachment_count: 1,
      is_spam: false,
      domain: DOMAIN,
      envelope: { from: 'ann@remote.test', to: [`support@${DOMAIN}`] },
      authentication: {
        spf: { result: 'pass' },
        dkim: { result: 'pass', detail: 'd=remote.test' },
        dmarc: { result: 'pass' },
      },
    });
    expect(listed.id).toMatch(/^in_[0-9a-z]+$/);
    expect(listed.spam_score).toBe(0);
    expect(listed.headers).toMatchObject({ subject: 'Order 42', 'dkim-signature': expect.any(String) });
    expect(listed.headers['content-type']).toMatch(/^multipart\/mixed/);
    expect(Date.parse(listed.created_at)).not.toBeNaN();

    const one = await acme.live.get(`/v1/emails/received/${listed.id}`);
    expect(one.body).toEqual(listed);

    const attachments = await acme.live.get(`/v1/emails/received/${listed.id}/attachments`);
    expect(attachments.body.data).toEqual([
      expect.objectContaining({ filename: 'receipt.txt', content_type: 'text/plain', size: 11 }),
    ]);
    const attachment = await acme.live.get(
      `/v1/emails/received/${listed.id}/attachments/${attachments.body.data[0].id}`,
    );
    const file = await fetch(local(attachment.body.download_url));
    expect(await file.text()).toBe('paid 42 EUR');

    const raw = await acme.live.get(`/v1/emails/received/${listed.id}/raw`);
    const message = await (await fetch(local(raw.body.download_url))).text();
    expect(message).toContain('Subject: Order 42');
    expect(raw.body.size).toBe(Buffer.byteLength(message));

    await expect.poll(() => receiver.ofType('email.received').length, POLL).toBe(1);
    const [hook] = receiver.ofType('email.received');
    expect(hook.verifiedWith).toHaveLength(1);
    expect(hook.payload.data).toEqual({
      received_email_id: listed.id,
      domain: DOMAIN,
      from: { email: 'ann@remote.test', name: 'Ann Example' },
      to: [{ email: `support@${DOMAIN}`, name: 'Support' }],
      cc: [{ email: `cc@${DOMAIN}`, name: null }],
      envelope: { from: 'ann@remote.test', to: [`support@${DOMAIN}`] },
      subject: 'Order 42',
      message_id: listed.message_id,
      attachments: [
        { id: attachments.body.data[0].id, filename: 'receipt.txt', content_type: 'text/plain', size: 11 },
      ],
      spam_score: 0,
      is_spam: false,
      timestamp: listed.created_at,
    });
  });

  it('fails DMARC under strict alignment when SPF and DKIM pass only for a subdomain of the From domain', async () => {
    await mx().sendMail({
      envelope: { from: 'bounce@mail.strict.test', to: [`support@${DOMAIN}`] },
      from: 'Ann <ann@strict.test>',
      to: `support@${DOMAIN}`,
      subject: 'Strictly aligned?',
      text: 'Signed by a subdomain.',
      dkim: {
        domainName: 'mail.strict.test',
        keySelector: 'sel',
        privateKey: dkimPrivateKey,
      },
    });
    const listed = await receivedWith('Strictly aligned?');
    expect(listed.authentication).toMatchObject({
      spf: { result: 'pass' },
      dkim: { result: 'pass', detail: 'd=mail.strict.test' },
      dmarc: { result: 'fail', detail: 'p=reject d=strict.test' },
    });
    expect(listed.spam_score).toBe(3);
  });

  it('does not count an rsa-sha1 signature (RFC 8301): DKIM policy, and DMARC fails without it', async () => {
    const message = [
      'From: Ann <ann@remote.test>',
      `To: support@${DOMAIN}`,
      'Subject: Signed with SHA-1',
      'Message-ID: <sha1@remote.test>',
      'Date: Sun, 01 Mar 2026 00:00:00 +0000',
      '',
      'An old signer.',
      '',
    ].join('\r\n');
    await sentWithoutSpf(`${await remoteSignature(message, { algorithm: 'rsa-sha1' })}${message}`);
    const listed = await receivedWith('Signed with SHA-1');
    expect(listed.authentication).toMatchObject({
      spf: { result: 'none' },
      dkim: { result: 'policy', detail: 'd=remote.test; weak algorithm' },
      dmarc: { result: 'fail', detail: 'p=reject d=remote.test' },
    });
  });

  it('says how much of the body a passing signature leaves unsigned (l=), as when someone appended to it', async () => {
    const signedPart = 'Pay invoice 42.\r\n';
    const appended = 'Wire it to account 666 instead.\r\n';
    const message = [
      'From: Ann <ann@remote.test>',
      `To: support@${DOMAIN}`,
      'Subject: Partly signed',
      'Message-ID: <partly@remote.test>',
      'Date: Sun, 01 Mar 2026 00:00:00 +0000',
      '',
      signedPart,
    ].join('\r\n');
    const signature = await remoteSignature(message, { maxBodyLength: Buffer.byteLength(signedPart) });
    expect(signature).toContain(`l=${Buffer.byteLength(signedPart)}`);
    await sentWithoutSpf(`${signature}${message}${appended}`);
    const listed = await receivedWith('Partly signed');
    const unsigned = `${Buffer.byteLength(appended)} bytes of the body unsigned (l=)`;
    expect(listed.authentication).toMatchObject({
      dkim: { result: 'pass', detail: `d=remote.test; ${unsigned}` },
      dmarc: { result: 'pass', detail: `p=reject d=remote.test; ${unsigned}` },
    });
    expect(listed.text_body).toContain('account 666');
  });

  it('gives each header name one string (three Received joined in order) and every header in order in header_list', async () => {
    const received = [
      'from relay2.remote.test by mx.acme-in.test; Wed, 1 Apr 2026 10:00:02 +0000',
      'from relay1.remote.test by relay2.remote.test; Wed, 1 Apr 2026 10:00:01 +0000',
      'from laptop.remote.test by relay1.remote.test; Wed, 1 Apr 2026 10:00:00 +0000',
    ];
    const raw = [
      ...received.map((r) => `Received: ${r}`),
      'From: Ann <ann@remote.test>',
      `To: support@${DOMAIN}`,
      'Subject: Three hops',
      'Message-ID: <hops@remote.test>',
      '',
      'Hello',
      '',
    ].join('\r\n');
    const info = await mx().sendMail({
      envelope: { from: 'ann@remote.test', to: [`support@${DOMAIN}`] },
      raw,
    });
    expect(info.response).toBe('250 2.0.0 Ok: received');
    const listed = await receivedWith('Three hops');
    const one = (await acme.live.get(`/v1/emails/received/${listed.id}`)).body;
    for (const email of [listed, one]) {
      expect(email.headers.received).toBe(received.join('\n'));
      for (const [name, value] of Object.entries(email.headers)) expect(value, name).toBeTypeOf('string');
      expect(email.headers).toMatchObject({ from: 'Ann <ann@remote.test>', subject: 'Three hops' });
      expect(email.header_list.slice(0, 4)).toEqual([
        ...received.map((value) => ({ name: 'received', value })),
        { name: 'from', value: 'Ann <ann@remote.test>' },
      ]);
    }
  });

  it('lists the addresses inside address groups in to, cc, reply_to and from; an empty group gives none', async () => {
    const raw = [
      'From: Staff: Ann <ann@remote.test>;',
      'To: undisclosed-recipients:;',
      `Cc: team: a@${DOMAIN}, "Bea B" <b@${DOMAIN}>;, Cy <c@remote.test>`,
      'Reply-To: replies: r@remote.test;',
      'Subject: Grouped',
      'Message-ID: <grouped@remote.test>',
      '',
      'Hello',
      '',
    ].join('\r\n');
    const info = await mx().sendMail({ envelope: { from: 'ann@remote.test', to: [`a@${DOMAIN}`] }, raw });
    expect(info.response).toBe('250 2.0.0 Ok: received');
    const listed = await receivedWith('Grouped');
    expect(listed).toMatchObject({
      from: { email: 'ann@remote.test', name: 'Ann' },
      to: [],
      cc: [
        { email: `a@${DOMAIN}`, name: null },
        { email: `b@${DOMAIN}`, name: 'Bea B' },
        { email: 'c@remote.test', name: 'Cy' },
      ],
      reply_to: [{ email: 'r@remote.test', name: null }],
    });
    await expect
      .poll(() => receiver.ofType('email.received').find((h) => h.payload.data.subject === 'Grouped'), POLL)
      .toBeDefined();
    const hook = receiver.ofType('email.received').find((h) => h.payload.data.subject === 'Grouped')!;
    expect(hook.payload.data).toMatchObject({ to: [], cc: listed.cc, from: listed.from });
  });

  it('filters the list by domain, sender and date, and is not shadowed by GET /v1/emails/:id', async () => {
    await mx().sendMail({
      envelope: { from: 'zed@other.test', to: [`sales@${DOMAIN}`] },
      from: 'zed@other.test',
      to: `sales@${DOMAIN}`,
      subject: 'Filter me',
      text: 'x',
    });
    const mine = await receivedWith('Filter me');
    const byFrom = await acme.live.get('/v1/emails/received?from=ZED@other.test');
    expect(byFrom.body.data.map((e: any) => e.id)).toEqual([mine.id]);
    const byDomain = await acme.live.get(`/v1/emails/received?domain=${DOMAIN}&limit=100`);
    expect(byDomain.body.data.map((e: any) => e.id)).toContain(mine.id);
    expect((await acme.live.get('/v1/emails/received?domain=nothing.test')).body.data).toEqual([]);
    const later = new Date(Date.parse(mine.created_at) + 1000).toISOString();
    expect((await acme.live.get(`/v1/emails/received?from_date=${later}`)).body.data).toEqual([]);
    expect(
      (await acme.live.get(`/v1/emails/received?to_date=${later}&limit=100`)).body.data.map((e: any) => e.id),
    ).toContain(mine.id);
    const bad = await acme.live.get('/v1/emails/received?from_date=yesterday');
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('validation_error');
    // Another organization sees none of it.
    const other = await svc.createOrg('pro');
    expect((await other.live.get(`/v1/emails/received/${mine.id}`)).status).toBe(404);
    expect((await acme.live.get('/v1/emails/received/in_01unknown')).body.error.code).toBe('not_found');
  });

  it('takes unsubscribe+…, b+… and fbl@ at the domain as its mail; on a return-path domain they are Postline’s', async () => {
    const own = [`unsubscribe+news@${DOMAIN}`, `b+john_doe@${DOMAIN}`, `fbl@${DOMAIN}`];
    const info = await mx().sendMail({
      envelope: { from: 'ann@remote.test', to: own },
      from: 'ann@remote.test',
      to: own.join(', '),
      subject: 'Plus addresses',
      text: 'x',
    });
    expect(info.response).toBe('250 2.0.0 Ok: received');
    expect((await receivedWith('Plus addresses')).envelope.to).toEqual(own);

    // The same local parts on the bounce domain and on a custom return path: the unsubscribe and bounce routes,
    // which know no such token or email (5.1.1, not inbound's 5.7.1).
    const c = await rawSmtp(mxPort);
    await c.command('EHLO remote.test');
    expect((await c.command('MAIL FROM:<>')).code).toBe(250);
    const replies = [];
    for (const to of [
      'unsubscribe+news@mx.postline.test',
      'b+john_doe@mx.postline.test',
      'b+john_doe@bounces.acme-out.test',
      'fbl@mx.postline.test',
    ]) {
      const r = await c.command(`RCPT TO:<${to}>`);
      replies.push([to, r.code, r.text.slice(0, 5)]);
    }
    c.close();
    expect(replies).toEqual([
      ['unsubscribe+news@mx.postline.test', 550, '5.1.1'],
      ['b+john_doe@mx.postline.test', 550, '5.1.1'],
      ['b+john_doe@bounces.acme-out.test', 550, '5.1.1'],
      ['fbl@mx.postline.test', 250, expect.any(String)],
    ]);
  });

  it.each(MIME_CORPUS)('reads $name', async (sample) => {
    const to = `corpus@${DOMAIN}`;
    const info = await mx().sendMail({ envelope: { from: 'x@remote.test', to: [to] }, raw: sample.raw(to) });
    expect(info.response).toBe('250 2.0.0 Ok: received');
    const got = await receivedWith(sample.expect.subject);
    expect(got.from).toEqual(sample.expect.from);
    if (sample.expect.text !== undefined) expect(got.text_body?.trim()).toBe(sample.expect.text);
    if (sample.expect.html !== undefined) expect(got.html_body?.trim()).toBe(sample.expect.html);
    expect(
      got.attachments.map((a: any) => ({ filename: a.filename, content_type: a.content_type, size: a.size })),
    ).toEqual(sample.expect.attachments.map((a) => ({ size: expect.any(Number), ...a })));
    expect(got.parse_error).toBeNull();
  });
});

describe('a large message', () => {
  it('is written to disk as it arrives and its 20 MB attachment decoded into a file of its own, byte for byte', async () => {
    const file = Buffer.alloc(20 * 1024 * 1024);
    for (let i = 0; i < file.length; i += 4) file.writeUInt32LE((i * 2654435761) >>> 0, i);
    const info = await mx().sendMail({
      envelope: { from: 'ann@remote.test', to: [`big@${DOMAIN}`] },
      from: 'ann@remote.test',
      to: `big@${DOMAIN}`,
      subject: 'Large attachment',
      text: 'see attached',
      attachments: [{ filename: 'data.bin', content: file, contentType: 'application/octet-stream' }],
    });
    expect(info.response).toBe('250 2.0.0 Ok: received');
    const got = await receivedWith('Large attachment');
    expect(got.attachments).toEqual([expect.objectContaining({ filename: 'data.bin', size: file.length })]);
    const link = (await acme.live.get(`/v1/emails/received/${got.id}/attachments/${got.attachments[0].id}`))
      .body;
    const downloaded = Buffer.from(await (await fetch(local(link.download_url))).arrayBuffer());
    expect(downloaded.equals(file)).toBe(true);
  });
});

describe('one message for several organizations', () => {
  it('is recorded once for each, with only its own recipients, and once for two addresses of one', async () => {
    const globex = await svc.createOrg('pro');
    await addVerifiedDomain(globex.live, dns, 'globex-in.test', { inbound_enabled: true });
    const info = await mx().sendMail({
      envelope: { from: 'ann@remote.test', to: [`a@${DOMAIN}`, `b@${DOMAIN}`, 'c@globex-in.test'] },
      from: 'ann@remote.test',
      to: `a@${DOMAIN}, b@${DOMAIN}, c@globex-in.test`,
      subject: 'Shared',
      text: 'for all of you',
      attachments: [{ filename: 'notes.txt', content: 'shared notes' }],
    });
    expect(info.response).toBe('250 2.0.0 Ok: received');
    const mine = await receivedWith('Shared');
    expect(mine.envelope.to).toEqual([`a@${DOMAIN}`, `b@${DOMAIN}`]);
    expect(
      (await acme.live.get('/v1/emails/received?limit=100')).body.data.filter(
        (e: any) => e.subject === 'Shared',
      ),
    ).toHaveLength(1);
    let theirs: any;
    await expect
      .poll(async () => {
        theirs = (await globex.live.get('/v1/emails/received')).body.data[0];
        return theirs?.subject;
      }, POLL)
      .toBe('Shared');
    expect(theirs.envelope.to).toEqual(['c@globex-in.test']);
    expect(theirs.domain).toBe('globex-in.test');
    expect(theirs.id).not.toBe(mine.id);
    // Each reads the same attachment through its own received email.
    for (const [org, email] of [
      [acme, mine],
      [globex, theirs],
    ] as const) {
      const link = (
        await org.live.get(`/v1/emails/received/${email.id}/attachments/${email.attachments[0].id}`)
      ).body;
      expect(await (await fetch(local(link.download_url))).text()).toBe('shared notes');
    }
  });
});

describe('the MX refuses', () => {
  it('a foreign domain, an own domain without inbound, and a test-mode domain with it', async () => {
    const testDomain = await acme.test.post('/v1/domains', {
      name: 'acme-sandbox.test',
      inbound_enabled: true,
    });
    expect(testDomain.status).toBe(201);
    const c = await rawSmtp(mxPort);
    await c.command('EHLO remote.test');
    expect((await c.command('MAIL FROM:<ann@remote.test>')).code).toBe(250);
    for (const to of ['someone@gmail.com', 'news@acme-out.test', 'dev@acme-sandbox.test']) {
      const r = await c.command(`RCPT TO:<${to}>`);
      expect([to, r.code, r.text.slice(0, 5)]).toEqual([to, 550, '5.7.1']);
    }
    expect((await c.command(`RCPT TO:<ok@${DOMAIN}>`)).code).toBe(250);
    c.close();
  });

  /** Sends `raw` to the inbound domain over a raw socket; the reply to its end of DATA. */
  async function dataReply(raw: Buffer) {
    const c = await rawSmtp(mxPort);
    await c.command('EHLO remote.test');
    await c.command('MAIL FROM:<ann@remote.test>');
    await c.command(`RCPT TO:<hostile@${DOMAIN}>`);
    expect((await c.command('DATA')).code).toBe(354);
    c.write(raw);
    const reply = await c.command('.');
    c.close();
    return [reply.code, reply.text.slice(0, 5)];
  }

  it('hostile MIME: 10,000 parts, 100 levels, a 100 KB header; and serves the next message', async () => {
    const parts = Array.from({ length: 10_000 }, () => '--b\r\nContent-Type: text/plain\r\n\r\nx\r\n').join(
      '',
    );
    const many = `From: a@remote.test\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n${parts}--b--\r\n`;
    expect(await dataReply(Buffer.from(many))).toEqual([554, '5.6.0']);

    let deep = 'From: a@remote.test\r\nContent-Type: multipart/mixed; boundary="d0"\r\n\r\n';
    for (let i = 1; i < 100; i++)
      deep += `--d${i - 1}\r\nContent-Type: multipart/mixed; boundary="d${i}"\r\n\r\n`;
    expect(await dataReply(Buffer.from(`${deep}--d99\r\n\r\nx\r\n`))).toEqual([554, '5.6.0']);

    const filler = Array.from({ length: 2000 }, (_, i) => `X-Filler-${i}: ${'y'.repeat(48)}\r\n`).join('');
    expect(await dataReply(Buffer.from(`From: a@remote.test\r\n${filler}\r\nbody\r\n`))).toEqual([
      552,
      '5.3.4',
    ]);

    expect(
      await dataReply(Buffer.from('From: a@remote.test\r\nSubject: after the storm\r\n\r\nfine\r\n')),
    ).toEqual([250, '2.0.0']);
    expect((await receivedWith('after the storm')).text_body).toBe('fine\n');
  });
});

describe('test mode', () => {
  it('injects a raw message with a test key, as if it had arrived; live keys may not', async () => {
    const raw = [
      'From: Tess <tess@remote.test>',
      `To: hooks@${DOMAIN}`,
      'Subject: Injected',
      '',
      'Hello handler',
    ].join('\n');
    const injected = await acme.test.post('/v1/emails/received', { raw, to: [`hooks@${DOMAIN}`] });
    expect(injected.status).toBe(201);
    expect(injected.body).toMatchObject({
      object: 'received_email',
      subject: 'Injected',
      from: { email: 'tess@remote.test', name: 'Tess' },
      text_body: 'Hello handler',
      envelope: { from: '', to: [`hooks@${DOMAIN}`] },
      authentication: { spf: { result: 'none' } },
    });
    expect((await acme.test.get(`/v1/emails/received/${injected.body.id}`)).body).toEqual(injected.body);
    // Test and live data stay apart.
    expect((await acme.live.get(`/v1/emails/received/${injected.body.id}`)).status).toBe(404);

    const live = await acme.live.post('/v1/emails/received', { raw });
    expect(live.status).toBe(403);
    expect(live.body.error.code).toBe('test_mode_only');
    const invalid = await acme.test.post('/v1/emails/received', { raw: '', extra: 1 });
    expect(invalid.status).toBe(422);
    expect(invalid.body.error.code).toBe('validation_error');
    const messageFor = async (body: object) =>
      (await acme.test.post('/v1/emails/received', body)).body.error.message;
    expect(await messageFor({})).toBe('`raw`: is required: the whole MIME message');
    expect(await messageFor({ raw: 5 })).toBe('`raw`: must be a string, not a number');
  });
});

describe('the MX when the blob store fails', () => {
  it('answers 451 4.3.0, records nothing, and takes the same message once storage is back', async () => {
    const blobs = join(svc.postline.services.config.POSTLINE_DATA_DIR, 'blobs');
    const aside = `${blobs}.aside`;
    const send = () =>
      mx().sendMail({
        envelope: { from: 'ann@remote.test', to: [`support@${DOMAIN}`] },
        from: 'ann@remote.test',
        to: `support@${DOMAIN}`,
        subject: 'Stored once',
        text: 'x',
      });
    // A file where the folder should be and no table for small blobs: every write fails, as on a broken disk.
    const db = svc.postline.services.db;
    await rename(blobs, aside);
    await writeFile(blobs, 'not a folder');
    await db.exec('ALTER TABLE blob_rows RENAME TO blob_rows_aside');
    try {
      const refused = await send().then(
        () => null,
        (error: { responseCode?: number; response?: string }) => [error.responseCode, error.response],
      );
      expect(refused).toEqual([
        451,
        '451 4.3.0 Temporary failure: the message was not stored; send it again',
      ]);
    } finally {
      await db.exec('ALTER TABLE blob_rows_aside RENAME TO blob_rows');
      await rm(blobs);
      await rename(aside, blobs);
    }
    expect((await send()).response).toBe('250 2.0.0 Ok: received');
    await receivedWith('Stored once');
    const all = (await acme.live.get('/v1/emails/received?limit=100')).body.data;
    expect(all.filter((e: any) => e.subject === 'Stored once')).toHaveLength(1);
  });
});
