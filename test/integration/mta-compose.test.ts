import { generateKeyPairSync } from 'node:crypto';
import { dkimVerify } from 'mailauth';
import { describe, expect, it } from 'vitest';
import { parseVerp, verpAddress } from '../../domain/emails/verp.ts';
import { composeMessage } from '../../processes/delivery/mta/compose.ts';
import type { OutboundMessage } from '../../processes/delivery/mta/message.ts';

const message = (over: Partial<OutboundMessage> = {}): OutboundMessage => ({
  messageId: '<em_01abc@sender.test>',
  date: new Date('2026-03-01T10:00:00Z'),
  from: 'Acme <hello@sender.test>',
  to: ['Ann <ann@one.test>'],
  cc: ['cc@two.test'],
  bcc: ['secret@three.test'],
  replyTo: ['support@sender.test'],
  subject: 'Héllo',
  text: 'plain body',
  html: '<p>html body</p>',
  headers: {},
  attachments: [],
  envelopeFrom: 'b+em_01abc@bounces.sender.test',
  dkim: null,
  ...over,
});

const headerBlock = (raw: Buffer) => raw.toString('utf8').split('\r\n\r\n')[0];

describe('VERP return path', () => {
  it('round-trips an email id through the address', () => {
    const address = verpAddress('em_01jq3v7k8m9n0p1q2r3s4t5v6w', 'bounces.example.com');
    expect(address).toBe('b+em_01jq3v7k8m9n0p1q2r3s4t5v6w@bounces.example.com');
    expect(parseVerp(address)).toEqual({ emailId: 'em_01jq3v7k8m9n0p1q2r3s4t5v6w' });
    expect(parseVerp(`<${address.toUpperCase()}>`)).toEqual({ emailId: 'em_01jq3v7k8m9n0p1q2r3s4t5v6w' });
  });

  it('rejects addresses that are not ours', () => {
    expect(parseVerp('someone@example.com')).toBeNull();
    expect(parseVerp('b+@example.com')).toBeNull();
    expect(parseVerp('b+em_x@y@')).toBeNull();
    expect(parseVerp('b+../etc@example.com')).toBeNull();
    expect(() => verpAddress('not an id', 'example.com')).toThrow();
  });
});

describe('composeMessage', () => {
  it('keeps Bcc out of the headers and the Message-ID and Date stable', async () => {
    const raw = await composeMessage(message());
    const headers = headerBlock(raw);
    expect(headers).not.toMatch(/^bcc:/im);
    expect(raw.toString()).not.toContain('secret@three.test');
    expect(headers).toMatch(/^Message-ID: <em_01abc@sender\.test>$/m);
    expect(headers).toMatch(/^Date: Sun, 01 Mar 2026 10:00:00 \+0000$/m);
    expect(headers).toMatch(/^Reply-To: support@sender\.test$/m);
    expect(headers).toMatch(/^Cc: cc@two\.test$/m);
  });

  it('composes the same email to the same bytes every time, signature included', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const m = message({
      dkim: {
        domainName: 'sender.test',
        keySelector: 'pl1',
        privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      },
      attachments: [{ filename: 'a.txt', contentType: 'text/plain', content: Buffer.from('attached') }],
    });
    const [a, b] = [await composeMessage(m), await composeMessage(m)];
    expect(a.equals(b)).toBe(true);
    expect(a.toString().startsWith('DKIM-Signature: ')).toBe(true);
  });

  it.each(['rsa', 'ed25519'] as const)(
    'signs with an %s key so that the signature verifies, and fails once a From is added',
    async (type) => {
      const { privateKey, publicKey } =
        type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519');
      const spki = publicKey.export({ type: 'spki', format: 'der' });
      // An Ed25519 record carries the raw 32-byte key (RFC 8463).
      const p = (type === 'rsa' ? spki : spki.subarray(-32)).toString('base64');
      const verify = (raw: Buffer) =>
        dkimVerify(raw, {
          resolver: async (name: string, rr: string) => {
            if (name === 'pl1._domainkey.sender.test' && rr === 'TXT')
              return [[`v=DKIM1; k=${type}; p=${p}`]];
            throw Object.assign(new Error(`no ${rr} for ${name}`), { code: 'ENOTFOUND' });
          },
        });
      const raw = await composeMessage(
        message({
          subject: 'A subject long enough that it is folded over more than one line, with  double  spaces',
          text: 'trailing white space \t \r\nand blank lines at the end\r\n\r\n\r\n',
          headers: { 'X-Campaign': 'spring   sale' },
          attachments: [{ filename: 'a.txt', contentType: 'text/plain', content: Buffer.alloc(5000, 'a') }],
          dkim: {
            domainName: 'sender.test',
            keySelector: 'pl1',
            privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
          },
        }),
      );
      const [result] = (await verify(raw)).results;
      expect(result.status.result).toBe('pass');
      expect(result.signingDomain).toBe('sender.test');
      expect(raw.toString()).toMatch(new RegExp(`^DKIM-Signature: v=1;\\r\\n a=${type}-sha256;`));

      const forged = Buffer.concat([Buffer.from('From: Evil <evil@evil.test>\r\n'), raw]);
      expect((await verify(forged)).results[0].status.result).not.toBe('pass');
    },
  );

  it('drops custom headers that would override the ones Postline writes, and folds CR/LF away', async () => {
    const raw = await composeMessage(
      message({
        headers: {
          'Message-ID': '<forged@evil.test>',
          From: 'evil@evil.test',
          'X-Entity-Ref': 'abc\r\nBcc: injected@evil.test',
          'Bad Name': 'x',
        },
      }),
    );
    const headers = headerBlock(raw);
    expect(headers).not.toContain('forged@evil.test');
    expect(headers).not.toContain('evil@evil.test');
    expect(headers).not.toMatch(/^bcc:/im);
    expect(headers).toMatch(/^X-Entity-Ref: abc Bcc: injected@evil\.test$/m);
    expect(headers).not.toContain('Bad Name');
  });
});
