import { beforeAll, describe, expect, it } from 'vitest';
import {
  type InboundEmailReceived,
  receivedEmailStream,
} from '../../domain/received-emails/received-email.events.ts';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain } from '../support/domains.ts';
import { receivedWithSubject } from '../support/inbound.ts';
import { rawSmtp } from '../support/raw-smtp.ts';
import type { TestOrg } from '../support/service.ts';

/**
 * Received mail as senders write it beyond the common case: internationalized domains named in Unicode
 * (SMTPUTF8), one message for two of an organization's domains, html-only mail, headers repeated or in UTF-8;
 * and how a message is stored.
 */

let acme: TestOrg;
let mxPort: number;
const DOMAIN = 'acme-rx.test';
const SECOND = 'acme-rx2.test';
const IDN = 'bücher-rx.test';
const IDN_ASCII = 'xn--bcher-rx-65a.test';

const { svc, dns } = useDnsService({ processes: true, env: { SMTP_MX_PORT: '0' } });
beforeAll(async () => {
  mxPort = svc.postline.smtp!.mxPort!;
  acme = await svc.createOrg('pro');
  await addVerifiedDomain(acme.live, dns, DOMAIN, { inbound_enabled: true });
  await addVerifiedDomain(acme.live, dns, SECOND, { inbound_enabled: true });
  const idn = await addVerifiedDomain(acme.live, dns, IDN, { inbound_enabled: true });
  expect(idn.name).toBe(IDN_ASCII);
});

/** One message over a raw socket: each command's reply, the end of DATA's last (null when one before failed). */
async function deliver(mailFrom: string, rcptTo: string[], raw: string, params = 'BODY=8BITMIME SMTPUTF8') {
  const c = await rawSmtp(mxPort);
  // Commands in UTF-8, as SMTPUTF8 has them (rawSmtp's `command` writes Latin-1).
  const command = (line: string) => {
    c.write(Buffer.from(`${line}\r\n`, 'utf8'));
    return c.reply();
  };
  try {
    await c.command('EHLO remote.test');
    const replies = [await command(`MAIL FROM:<${mailFrom}> ${params}`.trim())];
    for (const to of rcptTo) replies.push(await command(`RCPT TO:<${to}>`));
    if (replies.some((r) => r.code !== 250)) return replies.map((r) => `${r.code} ${r.text}`);
    expect((await c.command('DATA')).code).toBe(354);
    c.write(Buffer.from(raw.replace(/\r?\n/g, '\r\n'), 'utf8'));
    const end = await c.command('.');
    return [...replies, end].map((r) => `${r.code} ${r.text}`);
  } finally {
    c.close();
  }
}

const listed = async (query: string) =>
  (await acme.live.get(`/v1/emails/received?limit=100&${query}`)).body.data.map((e: any) => e.subject);

describe('recipients', () => {
  it('takes mail for an internationalized domain named in Unicode, and lists it under either form', async () => {
    const replies = await deliver(
      'ann@remote.test',
      [`info@${IDN}`],
      `From: ann@remote.test\nTo: info@${IDN}\nSubject: IDN inbound\n\nHallo\n`,
    );
    expect(replies.at(-1)).toBe('250 2.0.0 Ok: received');
    const got = await receivedWithSubject(acme.live, 'IDN inbound');
    expect(got).toMatchObject({ domain: IDN_ASCII, envelope: { to: [`info@${IDN}`] } });
    expect(await listed(`domain=${encodeURIComponent(IDN)}`)).toEqual(['IDN inbound']);
    expect(await listed(`domain=${IDN_ASCII.toUpperCase()}`)).toEqual(['IDN inbound']);
  });

  it('records a message to two of one organization’s domains once, listed under each domain', async () => {
    const replies = await deliver(
      'ann@remote.test',
      [`a@${DOMAIN}`, `b@${SECOND}`],
      `From: ann@remote.test\nTo: a@${DOMAIN}, b@${SECOND}\nSubject: Both domains\n\nHi\n`,
    );
    expect(replies.at(-1)).toBe('250 2.0.0 Ok: received');
    const got = await receivedWithSubject(acme.live, 'Both domains');
    expect(got.envelope.to).toEqual([`a@${DOMAIN}`, `b@${SECOND}`]);
    expect(await listed(`domain=${DOMAIN}`)).toContain('Both domains');
    expect(await listed(`domain=${SECOND.toUpperCase()}`)).toContain('Both domains');
    expect((await listed('')).filter((s: string) => s === 'Both domains')).toHaveLength(1);
  });
});

describe('bodies', () => {
  it.each([
    ['a single html part', 'Content-Type: text/html; charset=utf-8\n\n<p>Hi</p>\n'],
    [
      'html alone in a multipart/mixed',
      'Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/html\n\n<p>Hi</p>\n--b--\n',
    ],
  ])(
    'of html-only mail (%s): text_body null, and the spam point for html without text',
    async (name, body) => {
      const subject = `Html only: ${name}`;
      const raw = `From: ann@remote.test\nTo: a@${DOMAIN}\nSubject: ${subject}\nDate: Wed, 1 Apr 2026 10:00:00 +0000\nMessage-ID: <${name.length}.html@remote.test>\nMIME-Version: 1.0\n${body}`;
      expect((await deliver('ann@remote.test', [`a@${DOMAIN}`], raw)).at(-1)).toBe('250 2.0.0 Ok: received');
      const got = await receivedWithSubject(acme.live, subject);
      expect(got.html_body.trim()).toBe('<p>Hi</p>');
      expect(got.text_body).toBeNull();
      // Authentication `none` (loopback has no SPF record) scores nothing: only "html without text" counts.
      expect(got.spam_score).toBe(0.5);
    },
  );

  it('keeps an empty text part as an empty text_body', async () => {
    const raw = `From: ann@remote.test\nTo: a@${DOMAIN}\nSubject: Empty text\nMIME-Version: 1.0\nContent-Type: multipart/alternative; boundary=b\n\n--b\nContent-Type: text/plain\n\n\n--b\nContent-Type: text/html\n\n<p></p>\n--b--\n`;
    expect((await deliver('ann@remote.test', [`a@${DOMAIN}`], raw)).at(-1)).toBe('250 2.0.0 Ok: received');
    const got = await receivedWithSubject(acme.live, 'Empty text');
    expect(got.text_body?.trim()).toBe('');
  });
});

describe('headers', () => {
  it('gives each line of a repeated header its own value in header_list, and reads UTF-8 header bytes as UTF-8', async () => {
    const raw = [
      'From: José Núñez <jose@remote.test>',
      `To: a@${DOMAIN}`,
      'Subject: =?utf-8?q?Caf=C3=A9?= first',
      'Subject: =?utf-8?q?Th=C3=A9?= second',
      'Message-ID: <one@remote.test>',
      'Message-ID: <two@remote.test>',
      'X-Note: Grüße',
      '',
      'x',
      '',
    ].join('\n');
    expect((await deliver('jose@remote.test', [`a@${DOMAIN}`], raw)).at(-1)).toBe('250 2.0.0 Ok: received');
    const got = await receivedWithSubject(acme.live, 'Café first');
    expect(got.from).toEqual({ email: 'jose@remote.test', name: 'José Núñez' });
    expect(got.message_id).toBe('<one@remote.test>');
    expect(got.header_list).toEqual([
      { name: 'from', value: 'José Núñez <jose@remote.test>' },
      { name: 'to', value: `a@${DOMAIN}` },
      { name: 'subject', value: 'Café first' },
      { name: 'subject', value: 'Thé second' },
      { name: 'message-id', value: '<one@remote.test>' },
      { name: 'message-id', value: '<two@remote.test>' },
      { name: 'x-note', value: 'Grüße' },
    ]);
    expect(got.headers).toMatchObject({
      from: 'José Núñez <jose@remote.test>',
      subject: 'Café first\nThé second',
      'message-id': '<one@remote.test>\n<two@remote.test>',
    });
  });
});

describe('8-bit bytes', () => {
  it('takes UTF-8 headers under SMTPUTF8 alone (RFC 6531), and refuses 8-bit bytes declared by neither', async () => {
    const raw = `From: Zoë <zoe@remote.test>\nTo: a@${DOMAIN}\nSubject: Grüße aus Köln\n\nHallo\n`;
    expect((await deliver('zoe@remote.test', [`a@${DOMAIN}`], raw, 'SMTPUTF8')).at(-1)).toBe(
      '250 2.0.0 Ok: received',
    );
    const got = await receivedWithSubject(acme.live, 'Grüße aus Köln');
    expect(got.from).toEqual({ email: 'zoe@remote.test', name: 'Zoë' });
    const refused = raw.replace('Köln', 'Bonn');
    expect((await deliver('zoe@remote.test', [`a@${DOMAIN}`], refused, '')).at(-1)).toMatch(/^554 5\.6\.7 /);
    expect(await listed('')).not.toContain('Grüße aus Bonn');
  });
});

describe('attachments', () => {
  it('downloads a text attachment with its own charset, not one it was not written in', async () => {
    const latin1 = Buffer.from('Café;Müller\r\n', 'latin1').toString('base64');
    const raw = [
      'From: ann@remote.test',
      `To: a@${DOMAIN}`,
      'Subject: Latin-1 attachment',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary=b',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      'see the list',
      '--b',
      'Content-Type: text/csv; charset=ISO-8859-1',
      'Content-Disposition: attachment; filename="list.csv"',
      'Content-Transfer-Encoding: base64',
      '',
      latin1,
      '--b--',
      '',
    ].join('\n');
    expect((await deliver('ann@remote.test', [`a@${DOMAIN}`], raw)).at(-1)).toBe('250 2.0.0 Ok: received');
    const got = await receivedWithSubject(acme.live, 'Latin-1 attachment');
    expect(got.attachments).toEqual([
      expect.objectContaining({ filename: 'list.csv', content_type: 'text/csv', size: 13 }),
    ]);
    const link = (await acme.live.get(`/v1/emails/received/${got.id}/attachments/${got.attachments[0].id}`))
      .body;
    const url = new URL(link.download_url);
    const file = await fetch(`${svc.baseUrl}${url.pathname}${url.search}`);
    expect(file.headers.get('content-type')).toBe('text/csv; charset=iso-8859-1');
    expect(Buffer.from(await file.arrayBuffer()).toString('latin1')).toBe('Café;Müller\r\n');
  });
});

describe('storage', () => {
  it('commits a message’s raw copy, bodies, headers and attachment in the transaction of its record', async () => {
    const raw = [
      'From: ann@remote.test',
      `To: a@${DOMAIN}`,
      'Subject: One commit',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary=b',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      'the minutes',
      '--b',
      'Content-Type: text/plain; name="minutes.txt"',
      'Content-Disposition: attachment; filename="minutes.txt"',
      '',
      'All present.',
      '--b--',
      '',
    ].join('\n');
    expect((await deliver('ann@remote.test', [`a@${DOMAIN}`], raw)).at(-1)).toBe('250 2.0.0 Ok: received');
    const got = await receivedWithSubject(acme.live, 'One commit');
    const { store, db } = svc.postline.services;
    const [recorded] = await store.readStream(receivedEmailStream(got.id));
    const data = recorded.data as InboundEmailReceived['data'];
    const keys = [data.rawKey, data.contentKey, data.headersKey, ...data.attachments.map((a) => a.blobKey)];
    expect(keys).toHaveLength(4);
    // A row's xmin is the 32-bit id of the transaction that wrote it; the event's position starts with its 64-bit one.
    const eventTx = BigInt(recorded.position.split('.')[0]) % 2n ** 32n;
    const { rows } = await db.query<{ key: string; tx: string }>(
      'SELECT key, xmin::text AS tx FROM blob_rows WHERE key = ANY($1)',
      [keys],
    );
    expect(rows.map((r) => r.key).sort()).toEqual([...keys].sort());
    expect(new Set(rows.map((r) => r.tx))).toEqual(new Set([String(eventTx)]));
  });
});
