import { generateKeyPairSync } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { dkimSign } from 'mailauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { MAX_DKIM_SIGNATURES } from '../../smtp/dkim-signature-cap.ts';
import { inboundAuthenticator } from '../../smtp/sender-authentication.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';

/**
 * The MX's checks of a sender (mailauth) against DNS servers on loopback: one that answers, and one that never
 * does, as a sender's DNS that has gone away.
 */

const log = createLogger('silent');
const key = generateKeyPairSync('rsa', { modulusLength: 2048 });
const privateKey = key.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
const domains = Array.from({ length: MAX_DKIM_SIGNATURES + 3 }, (_, i) => `signer${i}.test`);
const message = [
  'From: Ann <ann@signer0.test>',
  'To: support@acme-in.test',
  'Subject: Signed many times',
  'Date: Sun, 01 Mar 2026 00:00:00 +0000',
  'Message-ID: <many@signer0.test>',
  '',
  'Hello.',
  '',
].join('\r\n');
const arrival = { ip: '127.0.0.1', helo: 'mx.signer0.test', mailFrom: 'ann@signer0.test' };

let dns: TestDnsServer;
let silent: Socket;
beforeAll(async () => {
  dns = await startDnsServer();
  const record = `v=DKIM1; k=rsa; p=${key.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;
  for (const domain of domains) dns.set(`sel._domainkey.${domain}`, 'TXT', [record.match(/.{1,250}/g)!]);
  dns.set('signer0.test', 'TXT', [['v=spf1 ip4:127.0.0.1 -all']]);
  // Takes every question and answers none.
  silent = createSocket('udp4');
  silent.bind(0, '127.0.0.1');
  await once(silent, 'listening');
});
afterAll(async () => {
  await dns?.close();
  silent?.close();
});

/** The message signed by each of `signers`, the first one's signature on top. */
async function signedBy(signers: string[]): Promise<Buffer> {
  let signed = message;
  for (const signingDomain of [...signers].reverse()) {
    const { signatures } = await dkimSign(signed, {
      signTime: new Date(),
      signatureData: [{ signingDomain, selector: 'sel', privateKey }],
    } as unknown as Parameters<typeof dkimSign>[1]);
    signed = signatures + signed;
  }
  return Buffer.from(signed);
}

describe('inbound authentication', () => {
  it(`verifies the first ${MAX_DKIM_SIGNATURES} DKIM signatures of a message and looks up no other key`, async () => {
    const authenticate = inboundAuthenticator([dns.serverAddress], 'mx.acme-in.test', log);
    const raw = await signedBy(domains);
    expect(raw.toString().match(/^DKIM-Signature:/gm)).toHaveLength(domains.length);

    const result = await authenticate(Readable.from([raw]), arrival);
    expect(result).toMatchObject({
      spf: { result: 'pass' },
      dkim: { result: 'pass', detail: 'd=signer0.test' },
      dmarc: { result: 'none' },
    });
    const keysAsked = domains.map((d) => dns.asked(`sel._domainkey.${d}`));
    expect(keysAsked).toEqual(domains.map((_, i) => (i < MAX_DKIM_SIGNATURES ? 1 : 0)));
  });

  it('gives every check up as temperror once the deadline passes, and stops reading the message', async () => {
    const { port } = silent.address();
    const authenticate = inboundAuthenticator([`127.0.0.1:${port}`], 'mx.acme-in.test', log, 200);
    const raw = Readable.from([await signedBy(domains.slice(0, 1))]);

    const result = await authenticate(raw, arrival);
    const gaveUp = { result: 'temperror', detail: 'the checks did not finish within 0.2 s' };
    expect(result).toEqual({ spf: gaveUp, dkim: gaveUp, dmarc: gaveUp, arc: gaveUp });
    expect(raw.destroyed).toBe(true);
  });
});
