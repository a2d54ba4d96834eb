import { createSocket } from 'node:dgram';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createResolver, type MailauthResolver, mailauthResolver } from '../../platform/dns.ts';
import { keptAnswers } from '../../smtp/dns-answers.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';

let dns: TestDnsServer;
beforeAll(async () => {
  dns = await startDnsServer();
});
afterAll(() => dns.close());

/** A resolver of the test server that counts the look-ups that reach it. */
function counted(servers: string[]) {
  const resolve = mailauthResolver(createResolver(servers, { timeout: 300, tries: 1 }));
  const asked: string[] = [];
  const resolver: MailauthResolver = (name, rrtype) => {
    asked.push(`${rrtype} ${name}`);
    return resolve(name, rrtype);
  };
  return { resolver, asked };
}

it('keeps records and "no such name" for 30 s, shares them, and hands each caller its own copy', async () => {
  dns.set('kept.test', 'TXT', [['v=spf1 -all']]);
  const { resolver, asked } = counted([dns.serverAddress]);
  let now = 1_000_000;
  const lookUp = keptAnswers(resolver, () => now);
  const [a, b] = await Promise.all([lookUp('kept.test', 'TXT'), lookUp('KEPT.test', 'TXT')]);
  expect(a).toEqual([['v=spf1 -all']]);
  a[0].push('changed by a caller');
  expect(b).toEqual([['v=spf1 -all']]);
  const missing = await lookUp('nowhere.test', 'TXT').catch((e) => e);
  expect(missing.code).toMatch(/ENOTFOUND|ENODATA/);
  expect(missing).toBeInstanceOf(Error);
  expect(missing.message).toMatch(/nowhere\.test/);
  missing.spfResult = 'marked by a caller';
  expect((await lookUp('nowhere.test', 'TXT').catch((e) => e)).spfResult).toBeUndefined();
  dns.set('kept.test', 'TXT', [['v=spf1 +all']]);
  now += 29_999;
  expect(await lookUp('kept.test', 'TXT')).toEqual([['v=spf1 -all']]);
  expect(asked).toEqual(['TXT kept.test', 'TXT nowhere.test']);
  now += 1;
  expect(await lookUp('kept.test', 'TXT')).toEqual([['v=spf1 +all']]);
  expect(asked).toHaveLength(3);
});

it('asks again after a failure that is no answer (a timeout)', async () => {
  const silent = createSocket('udp4');
  await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
  const { resolver, asked } = counted([`127.0.0.1:${silent.address().port}`]);
  const lookUp = keptAnswers(resolver);
  try {
    for (let i = 0; i < 2; i++)
      expect((await lookUp('slow.test', 'TXT').catch((e) => e)).code).toBe('ETIMEOUT');
    expect(asked).toEqual(['TXT slow.test', 'TXT slow.test']);
  } finally {
    silent.close();
  }
});
