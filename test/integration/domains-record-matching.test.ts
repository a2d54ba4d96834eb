import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useDnsService } from '../support/dns-service.ts';
import { publishDomainRecords } from '../support/domains.ts';
import type { TestOrg } from '../support/service.ts';

// What a published record must look like to count, as receivers evaluate it (docs/domains.md, Records).

let acme: TestOrg;
const { svc, dns } = useDnsService();
beforeAll(async () => {
  acme = await svc.createOrg('business');
});
beforeEach(() => dns.clear());

let n = 0;
const unique = () => `m${++n}-${Date.now().toString(36)}.example.com`;
const byPurpose = (domain: any, purpose: string) =>
  domain.dns_records.find((r: any) => r.purpose === purpose);

/** A domain with all its records published, then the record at `name` replaced by `values`; its status after a check. */
async function statusWith(purpose: string, values: (d: any) => string[]) {
  const d = await acme.live.post('/v1/domains', { name: unique() });
  publishDomainRecords(dns, d.body);
  const record = byPurpose(d.body, purpose);
  dns.set(record.name, 'TXT', values(d.body));
  const checked = await acme.live.post(`/v1/domains/${d.body.id}/verify`);
  expect(checked.status).toBe(200);
  return byPurpose(checked.body, purpose).status;
}

describe('SPF', () => {
  it('counts only the mechanisms before `all`: receivers never evaluate the ones after it', async () => {
    expect(
      await statusWith('spf', () => ['v=spf1 include:_spf.google.com ~all include:spf.postline.test']),
    ).toBe('failed');
    expect(
      await statusWith('spf', () => ['v=spf1 include:_spf.google.com include:spf.postline.test ~all']),
    ).toBe('verified');
  });

  it('takes `+` as the default qualifier, and refuses a mechanism that does not pass', async () => {
    expect(await statusWith('spf', () => ['v=spf1 +include:spf.postline.test -all'])).toBe('verified');
    expect(await statusWith('spf', () => ['v=spf1 INCLUDE:SPF.POSTLINE.TEST. -all'])).toBe('verified');
    expect(await statusWith('spf', () => ['v=spf1 ~include:spf.postline.test -all'])).toBe('failed');
    expect(await statusWith('spf', () => ['v=spf1 ?include:spf.postline.test -all'])).toBe('failed');
  });

  it('follows include: and redirect= as receivers do, within their ten look-ups', async () => {
    const corp = unique();
    dns.set(`_spf.${corp}`, 'TXT', ['v=spf1 ip4:192.0.2.1 include:_inner.' + corp + ' -all']);
    dns.set(`_inner.${corp}`, 'TXT', ['v=spf1 include:spf.postline.test ~all']);
    expect(await statusWith('spf', () => [`v=spf1 include:_spf.${corp} ~all`])).toBe('verified');
    // redirect= counts only in a record without `all`.
    expect(await statusWith('spf', () => [`v=spf1 redirect=_inner.${corp}`])).toBe('verified');
    expect(await statusWith('spf', () => [`v=spf1 ~all redirect=_inner.${corp}`])).toBe('failed');
    // Named after an `all` or with a qualifier that does not pass, in the included record too: nothing.
    dns.set(`_late.${corp}`, 'TXT', ['v=spf1 -all include:spf.postline.test']);
    expect(await statusWith('spf', () => [`v=spf1 include:_late.${corp} ~all`])).toBe('failed');
    dns.set(`_soft.${corp}`, 'TXT', ['v=spf1 ~include:spf.postline.test -all']);
    expect(await statusWith('spf', () => [`v=spf1 include:_soft.${corp} ~all`])).toBe('failed');
    // A chain past ten look-ups (receivers' permerror), and a loop, end.
    for (let i = 0; i < 11; i++)
      dns.set(`_c${i}.${corp}`, 'TXT', [
        i < 10 ? `v=spf1 include:_c${i + 1}.${corp} -all` : 'v=spf1 include:spf.postline.test -all',
      ]);
    expect(await statusWith('spf', () => [`v=spf1 include:_c0.${corp} ~all`])).toBe('failed');
    dns.set(`_loop.${corp}`, 'TXT', [`v=spf1 include:_loop.${corp} -all`]);
    expect(await statusWith('spf', () => [`v=spf1 include:_loop.${corp} ~all`])).toBe('failed');
  });
});

describe('DMARC', () => {
  it('accepts one DMARC record with any policy', async () => {
    expect(await statusWith('dmarc', () => ['v=DMARC1; p=reject; rua=mailto:d@example.com'])).toBe(
      'verified',
    );
    expect(await statusWith('dmarc', () => ['v=DMARC1;p=quarantine', 'some-other=txt'])).toBe('verified');
  });

  it('fails two DMARC records: receivers then apply no DMARC policy at all', async () => {
    expect(await statusWith('dmarc', () => ['v=DMARC1; p=none;', 'v=DMARC1; p=reject;'])).toBe('failed');
  });

  it('fails a DMARC record without a valid policy or report address', async () => {
    expect(await statusWith('dmarc', () => ['v=DMARC1'])).toBe('failed');
    expect(await statusWith('dmarc', () => ['v=DMARC1; p=block'])).toBe('failed');
    expect(await statusWith('dmarc', () => ['v=DMARC1; rua=mailto:d@example.com'])).toBe('verified');
  });

  it("accepts, for a subdomain without one, the parent domain's record: receivers apply that policy", async () => {
    const parent = `p${++n}-${Date.now().toString(36)}.example.com`;
    const d = await acme.live.post('/v1/domains', { name: `mail.news.${parent}` });
    publishDomainRecords(dns, d.body, (r) => r.purpose !== 'dmarc');
    const check = async () =>
      byPurpose((await acme.live.post(`/v1/domains/${d.body.id}/verify`)).body, 'dmarc');
    expect(await check()).toMatchObject({ status: 'failed', found: [] });
    dns.set(`_dmarc.${parent}`, 'TXT', ['v=DMARC1; p=reject; sp=quarantine']);
    expect(await check()).toMatchObject({ status: 'verified', found: ['v=DMARC1; p=reject; sp=quarantine'] });
    // The subdomain's own record, when it has one, is the one that applies.
    dns.set(`_dmarc.mail.news.${parent}`, 'TXT', ['v=DMARC1; p=bogus']);
    expect(await check()).toMatchObject({ status: 'failed', found: ['v=DMARC1; p=bogus'] });
  });
});
