import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { sign, signatureHeader } from '../../processes/webhooks/signer.ts';
import { generateSigningSecret } from '../../write-side/webhooks/webhook.commands.ts';

describe('webhook signer', () => {
  it('reproduces the Standard Webhooks reference vector', () => {
    expect(
      sign(
        'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        'msg_p5jXN8AQM9LWM0D4loKWxJek',
        1614265330,
        '{"test": 2432232314}',
      ),
    ).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('makes secrets of whsec_ and at least 24 random bytes', () => {
    const secret = generateSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(secret.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);
    expect(generateSigningSecret()).not.toBe(secret);
  });

  it('signs with every valid secret, and the standard verifier accepts either', () => {
    const [a, b] = [generateSigningSecret(), generateSigningSecret()];
    const ts = Math.floor(Date.now() / 1000);
    const body = '{"type":"email.sent"}';
    const header = signatureHeader([a, b], 'whl_1', ts, body);
    expect(header.split(' ')).toHaveLength(2);
    const headers = { 'webhook-id': 'whl_1', 'webhook-timestamp': String(ts), 'webhook-signature': header };
    expect(new Webhook(a).verify(body, headers)).toEqual({ type: 'email.sent' });
    expect(new Webhook(b).verify(body, headers)).toEqual({ type: 'email.sent' });
    expect(() => new Webhook(generateSigningSecret()).verify(body, headers)).toThrow();
  });
});
