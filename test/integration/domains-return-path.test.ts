import { generateKeyPairSync } from 'node:crypto';
import { authenticate } from 'mailauth';
import { beforeAll, describe, expect, it } from 'vitest';
import type { DnsRecord } from '../../domain/domains/domain.events.ts';
import { createResolver, mailauthResolver } from '../../platform/dns.ts';
import { newId } from '../../platform/ids.ts';
import { arfComplaint, type Original, postfixDsn } from '../fixtures/reports.ts';
import { publishDomainRecords } from '../support/domains.ts';
import { mxClient } from '../support/inbound.ts';
import { useLiveService } from '../support/live-service.ts';
import type { TestOrg } from '../support/service.ts';

/**
 * The return path. A domain that publishes DKIM, SPF on itself, DMARC and the tracking CNAME is verified and sends
 * with its envelope sender on the installation's bounce domain (POSTLINE_MX_HOST, `mx.postline.test` here), whose
 * bounces and complaints the MX takes; its optional custom return path (MX and SPF on `bounces.<domain>`) moves
 * the envelope sender there once both verify.
 */

let acme: TestOrg;
let mxPort: number;
const live = useLiveService({ env: { SMTP_MX_PORT: '0' } });
const { svc } = live;
beforeAll(async () => {
  mxPort = svc.postline.smtp!.mxPort!;
  acme = await svc.createOrg('business');
});

const BOUNCE_DOMAIN = 'mx.postline.test';
const POLL = { timeout: 20_000 };
let n = 0;
const unique = (label: string) => `${label}-${++n}-${Date.now().toString(36)}.test`;
const recipient = (label: string) => `${label}-${Math.random().toString(36).slice(2, 8)}@rcpt.test`;
const byPurpose = (domain: any, purpose: string) =>
  domain.dns_records.filter((r: any) => r.purpose === purpose);
/** The records a user who follows the Domain resource's required and recommended records publishes. */
const withoutReturnPath = (r: { purpose: string }) => r.purpose !== 'return_path';

async function verify(domainId: string) {
  const r = await acme.live.post(`/v1/domains/${domainId}/verify`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body;
}

/** A live email from `from` to a fresh recipient, delivered to the sink: its id and the message the sink got. */
async function sendDelivered(from: string) {
  const to = recipient('rp');
  const sent = await acme.live.post('/v1/emails', { from, to: [to], subject: 'Hello', text: 'Hi' });
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  const id: string = sent.body.id;
  await expect
    .poll(async () => (await acme.live.get(`/v1/emails/${id}`)).body.status, POLL)
    .toBe('delivered');
  const message = live.sink.messages.find((m) => m.rcptTo.includes(to));
  expect(message).toBeDefined();
  const original: Original = {
    from,
    to,
    subject: 'Hello',
    messageId: `<${id}@${from.split('@')[1]}>`,
    returnPath: message!.mailFrom,
  };
  return { id, to, message: message!, original };
}

/** What a remote server does with a report: a null sender, to `to`, through the MX. */
const report = (to: string, raw: string) =>
  mxClient(mxPort).sendMail({ envelope: { from: '', to: [to] }, raw });

describe('a domain with only DKIM, SPF, DMARC and the tracking CNAME published', () => {
  it('is verified, its custom return path optional and not found', async () => {
    const added = await acme.live.post('/v1/domains', { name: unique('spec') });
    publishDomainRecords(live.dns, added.body, withoutReturnPath);
    const d = await verify(added.body.id);
    expect(d.status).toBe('verified');
    expect(d.verified_at).not.toBeNull();
    for (const r of d.dns_records.filter(withoutReturnPath)) expect(r.status, r.purpose).toBe('verified');
    expect(byPurpose(d, 'return_path')).toMatchObject([
      { type: 'MX', required: false, status: 'failed', found: [] },
      { type: 'TXT', required: false, status: 'failed', found: [] },
    ]);
  });

  it("sends with a return path on the installation's bounce domain; SPF passes there, DKIM aligns for DMARC", async () => {
    const added = await acme.live.post('/v1/domains', { name: unique('spec') });
    publishDomainRecords(live.dns, added.body, withoutReturnPath);
    expect((await verify(added.body.id)).status).toBe('verified');
    const { id, message } = await sendDelivered(`news@${added.body.name}`);
    expect(message.mailFrom).toBe(`b+${id}@${BOUNCE_DOMAIN}`);

    // What the operator publishes once for the bounce domain: an MX to itself and SPF for the sending IPs.
    live.dns.set(BOUNCE_DOMAIN, 'MX', [{ exchange: BOUNCE_DOMAIN, priority: 10 }]);
    live.dns.set(BOUNCE_DOMAIN, 'TXT', ['v=spf1 ip4:127.0.0.1 -all']);
    const result = await authenticate(message.raw, {
      ip: '127.0.0.1',
      helo: message.heloName,
      sender: message.mailFrom,
      mta: 'mx.rcpt.test',
      resolver: mailauthResolver(createResolver([live.dns.serverAddress])),
    });
    expect(result.spf).toMatchObject({ domain: BOUNCE_DOMAIN, status: { result: 'pass' } });
    expect(result.dkim.results[0]).toMatchObject({
      signingDomain: added.body.name,
      status: { result: 'pass' },
    });
    expect(result.dmarc).toMatchObject({ domain: added.body.name, status: { result: 'pass' } });
  });

  it.each([
    ['a DSN', 'bounced', (o: Original) => postfixDsn(o)],
    ['an ARF complaint', 'complained', (o: Original) => arfComplaint(o, o.returnPath)],
  ])('takes %s to that return path at the MX and records it on the email (%s)', async (_, status, raw) => {
    const added = await acme.live.post('/v1/domains', { name: unique('spec') });
    publishDomainRecords(live.dns, added.body, withoutReturnPath);
    expect((await verify(added.body.id)).status).toBe('verified');
    const { id, to, original } = await sendDelivered(`news@${added.body.name}`);
    expect(original.returnPath).toBe(`b+${id}@${BOUNCE_DOMAIN}`);

    const info = await report(original.returnPath, raw(original));
    expect(info.response).toBe('250 2.0.0 Ok: received');
    await expect
      .poll(async () => (await acme.live.get(`/v1/emails/${id}`)).body.recipients[0].status, POLL)
      .toBe(status);
    const events = (await acme.live.get(`/v1/emails/${id}/events`)).body.data;
    expect(events.at(-1)).toMatchObject({ type: `email.${status}`, recipient: to });
    const log = await svc.postline.services.store.readStream(`email-${id}`);
    expect(log.at(-1)).toMatchObject({
      type: status === 'bounced' ? 'EmailBounced' : 'EmailComplained',
      metadata: { actor: 'mx' },
    });
    expect((await acme.live.get(`/v1/emails/${id}`)).body.recipients[0].email).toBe(to);
  });
});

describe('the custom return path', () => {
  it('moves the MAIL FROM onto bounces.<domain> once its MX and SPF records verify', async () => {
    const added = await acme.live.post('/v1/domains', { name: unique('custom') });
    const name = added.body.name;
    publishDomainRecords(live.dns, added.body, withoutReturnPath);
    expect((await verify(added.body.id)).status).toBe('verified');
    const before = await sendDelivered(`news@${name}`);
    expect(before.message.mailFrom).toBe(`b+${before.id}@${BOUNCE_DOMAIN}`);

    publishDomainRecords(live.dns, added.body);
    const d = await verify(added.body.id);
    expect(byPurpose(d, 'return_path')).toMatchObject([
      { type: 'MX', name: `bounces.${name}`, status: 'verified', found: ['10 mx.postline.test'] },
      { type: 'TXT', name: `bounces.${name}`, status: 'verified' },
    ]);
    const after = await sendDelivered(`news@${name}`);
    expect(after.message.mailFrom).toBe(`b+${after.id}@bounces.${name}`);
  });
});

describe('a domain added when the return path was required', () => {
  it('folds into the records of today: verified with DKIM and sending from the bounce domain', async () => {
    const { services } = svc.postline;
    const { publicKey, privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'der' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const name = unique('legacy');
    const domainId = newId('dom');
    const pending = { status: 'pending' as const, found: null };
    const dkimValue = `v=DKIM1; k=rsa; p=${publicKey.toString('base64')}`;
    // The records DomainAdded carried then: SPF and an MX on the return-path subdomain, both required.
    const records: DnsRecord[] = [
      {
        type: 'TXT',
        name: `pl1._domainkey.${name}`,
        value: dkimValue,
        purpose: 'dkim',
        required: true,
        ...pending,
      },
      {
        type: 'TXT',
        name: `bounces.${name}`,
        value: 'v=spf1 include:spf.postline.test ~all',
        purpose: 'spf',
        required: true,
        ...pending,
      },
      {
        type: 'MX',
        name: `bounces.${name}`,
        value: BOUNCE_DOMAIN,
        priority: 10,
        purpose: 'return_path',
        required: true,
        ...pending,
      },
      {
        type: 'TXT',
        name: `_dmarc.${name}`,
        value: 'v=DMARC1; p=none;',
        purpose: 'dmarc',
        required: false,
        ...pending,
      },
    ];
    const at = services.clock.now().toISOString();
    const appended = await services.store.append(
      `domain-${domainId}`,
      [
        {
          type: 'DomainAdded',
          data: {
            domainId,
            orgId: acme.orgId,
            mode: 'live',
            name,
            region: 'eu',
            openTracking: false,
            clickTracking: false,
            inboundEnabled: false,
            dkim: {
              selector: 'pl1',
              publicKey: publicKey.toString('base64'),
              sealedPrivateKey: services.secrets.seal(privateKey),
              createdAt: at,
            },
            returnPathDomain: `bounces.${name}`,
            trackingDomain: `track.${name}`,
            records,
            addedAt: at,
          },
          metadata: { orgId: acme.orgId, mode: 'live', actor: 'system' },
        },
      ],
      { expectedRevision: 'no_stream' },
    );
    await services.readYourWrites.waitFor(['domains'], appended.position);
    const shown = (await acme.live.get(`/v1/domains/${domainId}`)).body;
    expect(shown.dns_records.map((r: any) => [r.type, r.name, r.purpose, r.required])).toEqual([
      ['TXT', `pl1._domainkey.${name}`, 'dkim', true],
      ['TXT', `bounces.${name}`, 'return_path', false],
      ['MX', `bounces.${name}`, 'return_path', false],
      ['TXT', `_dmarc.${name}`, 'dmarc', false],
    ]);

    live.dns.set(`pl1._domainkey.${name}`, 'TXT', [dkimValue]);
    const d = await verify(domainId);
    expect(d.status).toBe('verified');
    const { id, message } = await sendDelivered(`news@${name}`);
    expect(message.mailFrom).toBe(`b+${id}@${BOUNCE_DOMAIN}`);
  });
});
