import { describe, expect, it } from 'vitest';
import { forbiddenRange } from '../../platform/public-address.ts';
import { checkLiteralHost, guardedLookup } from '../../platform/ssrf-guard.ts';

describe('webhook SSRF guard', () => {
  const refused: [string, string][] = [
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.2.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12:3456::1', 'uniqueLocal'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'linkLocal'],
    ['64:ff9b::7f00:1', 'rfc6052'],
    ['64:ff9b::a9fe:a9fe', 'rfc6052'],
    ['64:ff9b:1::a00:1', 'rfc6052'],
    ['::7f00:1', 'ipv4Compatible'],
    ['::a9fe:a9fe', 'ipv4Compatible'],
    ['::808:808', 'ipv4Compatible'],
    ['::2', 'ipv4Compatible'],
    ['2002:7f00:1::', '6to4'],
    ['2001::1', 'teredo'],
  ];
  for (const [address, range] of refused) {
    it(`refuses ${address} (${range})`, () => expect(forbiddenRange(address)).toBe(range));
  }

  it('lets public addresses through', () => {
    for (const address of [
      '93.184.216.34',
      '1.1.1.1',
      '2606:4700:4700::1111',
      '2a00:1450:4001::200e',
      '::ffff:8.8.8.8',
    ]) {
      expect(forbiddenRange(address), address).toBeNull();
    }
  });

  it('checks literal hosts in URLs in every spelling', () => {
    for (const url of [
      'http://127.0.0.1/',
      'http://[::1]:8080/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::7f00:1]/',
      'http://[::127.0.0.1]/',
      'http://2130706433/',
      'http://0x7f.1/',
      'https://10.0.0.1/',
    ]) {
      expect(checkLiteralHost(new URL(url)), url).not.toBeNull();
    }
    expect(checkLiteralHost(new URL('https://example.com/'))).toBeNull();
    expect(checkLiteralHost(new URL('https://93.184.216.34/'))).toBeNull();
  });

  it('refuses a name that resolves to an internal address, at connect time', async () => {
    const result = await new Promise<{ err: any; address: unknown }>((resolve) =>
      guardedLookup('localhost', { all: true }, (err, address) => resolve({ err, address })),
    );
    expect(result.err?.message).toMatch(/blocked: localhost resolves to (127\.0\.0\.1|::1)/);
  });
});
