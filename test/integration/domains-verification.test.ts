import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { authenticate, dkimSign } from 'mailauth';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { DomainEvent } from '../../domain/domains/domain.events.ts';
import { ManualClock } from '../../platform/clock.ts';
import { createResolver, mailauthResolver } from '../../platform/dns.ts';
import { isOneOf } from '../../platform/eventstore/types.ts';
import { DomainVerifierProcess } from '../../processes/domain-verifier/domain-verifier.process.ts';
import {
  domainsDueForCheck,
  findInboundDomains,
  findSendingDomain,
} from '../../read-side/domains/domains.queries.ts';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain, publishDomainRecords } from '../support/domains.ts';
import type { TestOrg } from '../support/service.ts';

const clock = new ManualClock('2026-03-01T00:00:00Z');
let acme: TestOrg;
let other: TestOrg;
let verifier: DomainVerifierProcess;

const HOUR = 3600_000;

const { svc, dns } = useDnsService({ clock, env: { DOMAIN_RECHECK_INTERVAL_MS: String(6 * HOUR) } });
beforeAll(async () => {
  acme = await svc.createOrg('business');
  other = await svc.createOrg('business');
  verifier = new DomainVerifierProcess(svc.postline.services);
});
beforeEach(() => dns.clear());

let n = 0;
const unique = () => `v${++n}-${Date.now().toString(36)}.example.com`;
const byPurpose = (domain: any, purpose: string) =>
  domain.dns_records.find((r: any) => r.purpose === purpose);
const eventTypes = async (id: string) =>
  (await svc.postline.services.store.readStream(`domain-${id}`)).map((e) => e.type);

/** One run of the periodic re-check; then the read model has caught up with what it appended. */
async function tick() {
  await verifier.runOnce();
  const { store, readYourWrites } = svc.postline.services;
  await readYourWrites.waitFor(['domains'], await store.headPosition({ committed: true }));
}

/** The periodic re-check once the interval has passed. */
async function recheck() {
  clock.advance(6 * HOUR + 1);
  await tick();
}

describe('POST /v1/domains/{id}/verify', () => {
  it('verifies a domain whose records are all published', async () => {
    const d = await acme.live.post('/v1/domains', { name: unique() });
    publishDomainRecords(dns, d.body);
    const r = await acme.live.post(`/v1/domains/${d.body.id}/verify`);
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('verified');
    expect(r.body.verified_at).toBe(clock.now().toISOString());
    expect(r.body.last_checked_at).toBe(clock.now().toISOString());
    for (const record of r.body.dns_records) {
      expect(record.status, record.purpose).toBe('verified');
      expect(record.found.length, record.purpose).toBeGreaterThan(0);
    }
    expect(byPurpose(r.body, 'return_path').found).toEqual(['10 mx.postline.test']);
    expect((await acme.live.get(`/v1/domains/${d.body.id}`)).body).toEqual(r.body);
    expect(await eventTypes(d.body.id)).toEqual([
      'DomainAdded',
      'DomainVerificationChecked',
      'DomainVerified',
    ]);
    const sending = await findSendingDomain(
      svc.postline.services.db,
      { orgId: acme.orgId, mode: 'live' },
      d.body.name,
    );
    expect(sending).toMatchObject({ status: 'verified', canSendLive: true });
  });

  it('emits DomainVerified only the first time', async () => {
    const d = await addVerifiedDomain(acme.live, dns, unique());
    const again = await acme.live.post(`/v1/domains/${d.id}/verify`);
    expect(again.body.status).toBe('verified');
    expect(await eventTypes(d.id)).toEqual([
      'DomainAdded',
      'DomainVerificationChecked',
      'DomainVerified',
      'DomainVerificationChecked',
    ]);
  });

  it('verifies without the recommended records, reporting them failed', async () => {
    const d = await acme.live.post('/v1/domains', { name: unique() });
    publishDomainRecords(dns, d.body, (r) => r.purpose !== 'dmarc' && r.purpose !== 'tracking');
    const r = await acme.live.post(`/v1/domains/${d.body.id}/verify`);
    expect(r.body.status).toBe('verified');
    expect(byPurpose(r.body, 'dmarc')).toMatchObject({ status: 'failed', found: [] });
    expect(byPurpose(r.body, 'tracking')).toMatchObject({ status: 'failed', found: [] });
  });

  it('is partially verified when a required record is missing', async () => {
    const d = await acme.live.post('/v1/domains', { name: unique() });
    publishDomainRecords(dns, d.body, (r) => r.purpose !== 'dkim');
    const r = await acme.live.post(`/v1/domains/${d.body.id}/verify`);
    expect(r.body.status).toBe('partially_verified');
    expect(byPurpose(r.body, 'dkim')).toMatchObject({ status: 'failed', found: [] });
    expect(byPurpose(r.body, 'spf').status).toBe('verified');
    expect(r.body.verified_at).toBeNull();
    expect(await eventTypes(d.body.id)).not.toContain('DomainVerified');
    expect(
      (await findSendingDomain(svc.postline.services.db, { orgId: acme.orgId, mode: 'live' }, d.body.name))
        ?.canSendLive,
    ).toBe(false);
  });

  it('fails when nothing is published', async () => {
    const d = await acme.live.post('/v1/domains', { name: unique() });
    const r = await acme.live.post(`/v1/domains/${d.body.id}/verify`);
    expect(r.body.status).toBe('failed');
    expect(r.body.dns_records.every((x: any) => x.status === 'failed')).toBe(true);
  });

  it('shows what was found when values are wrong', async () => {
    const d = await acme.live.post('/v1/domains', { name: unique() });
    publishDomainRecords(dns, d.body);
    const dkim = byPurpose(d.body, 'dkim');
    const spf = byPurpose(d.body, 'spf');
    const rp = byPurpose(d.body, 'return_path');
    dns.set(dkim.name, 'TXT', ['v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwrong']);
    dns.set(spf.name, 'TXT', ['v=spf1 include:_spf.google.com ~all']);
    dns.set(rp.name, 'MX', ['10 mx.elsewhere.test']);
    const r = await acme.live.post(`/v1/domains/${d.body.id}/verify`);
    expect(r.body.status).toBe('failed');
    expect(byPurpose(r.body, 'dkim')).toMatchObject({
      status: 'failed',
      found: ['v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwrong'],
    });
    expect(byPurpose(r.body, 'spf')).toMatchObject({
      status: 'failed',
      found: ['v=spf1 include:_spf.google.com ~all'],
    });
    expect(byPurpose(r.body, 'return_path')).toMatchObject({
      status: 'failed',
      found: ['10 mx.elsewhere.test'],
    });
  });

  it('accepts an SPF record that merges other senders, but not two SPF records', async () => {
    const d = await acme.live.post('/v1/domains', { name: unique() });
    publishDomainRecords(dns, d.body);
    const spf = byPurpose(d.body, 'spf');
    dns.set(spf.name, 'TXT', [
      'v=spf1 include:_spf.google.com include:spf.postline.test -all',
      'google-site-verification=abc',
    ]);
    expect(byPurpose((await acme.live.post(`/v1/domains/${d.body.id}/verify`)).body, 'spf').status).toBe(
      'verified',
    );
    dns.set(spf.name, 'TXT', [
      'v=spf1 include:spf.postline.test ~all',
      'v=spf1 include:_spf.google.com ~all',
    ]);
    expect(byPurpose((await acme.live.post(`/v1/domains/${d.body.id}/verify`)).body, 'spf').status).toBe(
      'failed',
    );
  });

  it('checks the inbound MX record when inbound is enabled', async () => {
    const name = unique();
    const d = await acme.live.post('/v1/domains', { name, inbound_enabled: true });
    publishDomainRecords(dns, d.body, (r) => r.purpose !== 'inbound');
    const before = await acme.live.post(`/v1/domains/${d.body.id}/verify`);
    expect(byPurpose(before.body, 'inbound').status).toBe('failed');
    expect(await findInboundDomains(svc.postline.services.db, name)).toEqual([
      { id: d.body.id, orgId: acme.orgId, mode: 'live', name, inboundVerified: false },
    ]);
    publishDomainRecords(dns, d.body);
    const after = await acme.live.post(`/v1/domains/${d.body.id}/verify`);
    expect(byPurpose(after.body, 'inbound')).toMatchObject({
      status: 'verified',
      found: ['10 mx.postline.test'],
    });
    expect((await findInboundDomains(svc.postline.services.db, name))[0].inboundVerified).toBe(true);
  });

  it("answers 404 for unknown ids, another organization's and the other mode's", async () => {
    const d = await acme.live.post('/v1/domains', { name: unique() });
    expect((await other.live.post(`/v1/domains/${d.body.id}/verify`)).status).toBe(404);
    expect((await acme.test.post(`/v1/domains/${d.body.id}/verify`)).status).toBe(404);
    expect((await acme.live.post('/v1/domains/dom_00000000000000000000000000/verify')).status).toBe(404);
    expect((await acme.live.post('/v1/domains/nope/verify')).status).toBe(404);
    expect(await eventTypes(d.body.id)).toEqual(['DomainAdded']);
  });
});

describe('a name verified by one organization', () => {
  it('cannot be added or verified by another organization', async () => {
    const name = unique();
    const early = await other.live.post('/v1/domains', { name });
    expect(early.status).toBe(201);
    await addVerifiedDomain(acme.live, dns, name);

    const third = await svc.createOrg('business');
    const late = await third.live.post('/v1/domains', { name });
    expect(late.status).toBe(409);
    expect(late.body.error).toMatchObject({ code: 'domain_exists' });
    expect(late.body.error.message).toMatch(/another organization/);

    publishDomainRecords(dns, early.body);
    const steal = await other.live.post(`/v1/domains/${early.body.id}/verify`);
    expect(steal.status).toBe(409);
    expect(steal.body.error.code).toBe('domain_exists');
    expect((await other.live.get(`/v1/domains/${early.body.id}`)).body.status).toBe('pending');
    // The periodic re-check leaves it out: it could never verify, and would crowd out the others.
    const fresh = await third.live.post('/v1/domains', { name: unique() });
    const due = (await domainsDueForCheck(svc.postline.services.db, new Date('2100-01-01'), 10_000)).map(
      (d) => d.id,
    );
    expect(due).toContain(fresh.body.id);
    expect(due).not.toContain(early.body.id);
  });

  it("is still left out of the other organization's re-checks once the holder's DNS broke", async () => {
    const name = unique();
    const early = await other.live.post('/v1/domains', { name });
    const held = await addVerifiedDomain(acme.live, dns, name);
    // The holder's records go (it left without deleting the domain); its hold lasts until it is purged.
    dns.clear();
    expect((await acme.live.post(`/v1/domains/${held.id}/verify`)).body.status).toBe('failed');
    publishDomainRecords(dns, early.body);
    expect((await other.live.post(`/v1/domains/${early.body.id}/verify`)).status).toBe(409);
    const due = (await domainsDueForCheck(svc.postline.services.db, new Date('2100-01-01'), 10_000)).map(
      (d) => d.id,
    );
    expect(due).toContain(held.id);
    expect(due).not.toContain(early.body.id);
  });

  it('can still be added by the same organization in test mode', async () => {
    const name = unique();
    await addVerifiedDomain(acme.live, dns, name);
    expect((await acme.test.post('/v1/domains', { name })).status).toBe(201);
  });
});

describe('periodic re-check', () => {
  it('reports a verified record that disappears, stops live sending, and verifies again when it is back', async () => {
    const d = await addVerifiedDomain(acme.live, dns, unique());
    await recheck();
    expect(await eventTypes(d.id)).toEqual([
      'DomainAdded',
      'DomainVerificationChecked',
      'DomainVerified',
      'DomainVerificationChecked',
    ]);

    const dkim = byPurpose(d, 'dkim');
    dns.remove(dkim.name);
    await recheck();
    const events = await svc.postline.services.store.readStream(`domain-${d.id}`);
    const changed = events.find((e) => e.type === 'DomainDnsChanged');
    expect(changed?.data).toEqual({
      domainId: d.id,
      name: d.name,
      records: [{ type: 'TXT', name: dkim.name, purpose: 'dkim', expected: dkim.value, found: [] }],
      status: 'partially_verified',
      detectedAt: clock.now().toISOString(),
    });
    expect(changed?.metadata).toMatchObject({ orgId: acme.orgId, mode: 'live', actor: 'system' });
    const now = await acme.live.get(`/v1/domains/${d.id}`);
    expect(now.body.status).toBe('partially_verified');
    expect(byPurpose(now.body, 'dkim').status).toBe('failed');
    expect(
      (await findSendingDomain(svc.postline.services.db, { orgId: acme.orgId, mode: 'live' }, d.name))
        ?.canSendLive,
    ).toBe(false);

    await recheck();
    expect((await eventTypes(d.id)).filter((t) => t === 'DomainDnsChanged')).toHaveLength(1);

    dns.set(dkim.name, 'TXT', [dkim.value]);
    const back = await acme.live.post(`/v1/domains/${d.id}/verify`);
    expect(back.body.status).toBe('verified');
    expect((await eventTypes(d.id)).filter((t) => t === 'DomainVerified')).toHaveLength(2);
    expect(
      (await findSendingDomain(svc.postline.services.db, { orgId: acme.orgId, mode: 'live' }, d.name))
        ?.canSendLive,
    ).toBe(true);
  });

  it('reports a record whose value changed', async () => {
    const d = await addVerifiedDomain(acme.live, dns, unique());
    dns.set(byPurpose(d, 'return_path').name, 'MX', ['10 mx.elsewhere.test']);
    await recheck();
    const changed = (await svc.postline.services.store.readStream(`domain-${d.id}`)).find((e) =>
      isOneOf<Extract<DomainEvent, { type: 'DomainDnsChanged' }>>(e, ['DomainDnsChanged']),
    );
    expect(changed?.data.records).toEqual([
      {
        type: 'MX',
        name: byPurpose(d, 'return_path').name,
        purpose: 'return_path',
        expected: 'mx.postline.test',
        found: ['10 mx.elsewhere.test'],
      },
    ]);
  });

  it('checks only domains that are due, and verifies pending domains whose records appeared', async () => {
    const d = await acme.live.post('/v1/domains', { name: unique() });
    await recheck();
    publishDomainRecords(dns, d.body);
    clock.advance(HOUR);
    await tick();
    expect((await acme.live.get(`/v1/domains/${d.body.id}`)).body.status).toBe('failed');
    await recheck();
    expect((await acme.live.get(`/v1/domains/${d.body.id}`)).body.status).toBe('verified');
  });

  it('re-checks a name the same organization verified in both modes, each domain on its own', async () => {
    const name = unique();
    const live = await addVerifiedDomain(acme.live, dns, name);
    const test = await addVerifiedDomain(acme.test, dns, name);
    dns.remove(byPurpose(live, 'dkim').name);
    await recheck();
    expect(await eventTypes(live.id)).toContain('DomainDnsChanged');
    expect((await eventTypes(test.id)).filter((t) => t === 'DomainVerificationChecked')).toHaveLength(2);
    expect(
      (await findSendingDomain(svc.postline.services.db, { orgId: acme.orgId, mode: 'live' }, name))
        ?.canSendLive,
    ).toBe(false);
  });

  it('leaves deleted domains alone', async () => {
    const d = await acme.live.post('/v1/domains', { name: unique() });
    await acme.live.delete(`/v1/domains/${d.body.id}`);
    await recheck();
    expect(await eventTypes(d.body.id)).toEqual(['DomainAdded', 'DomainDeleted']);
  });
});

/**
 * mailauth's typings want top-level signing fields; at run time it reads `signatureData`. `signTime` is given:
 * without it mailauth reads the clock twice, for the signed header and for the header it writes, and a second
 * turning over between the two gives a `t=` that was not signed (a bad signature, about once in a thousand).
 */
const sign = (signingDomain: string, selector: string, privateKey: string) =>
  ({
    signTime: new Date(),
    signatureData: [{ signingDomain, selector, privateKey }],
  }) as unknown as Parameters<typeof dkimSign>[1];

/** The TXT record mailauth was served for the key (`rr`, whitespace removed): set at run time, not in its typings. */
const servedRecord = (result: object) => (result as { rr?: string }).rr;

describe('the DKIM key in DNS matches the key Postline signs with', () => {
  it('signs a message that mailauth verifies against the published records (DKIM, SPF, DMARC pass)', async () => {
    const name = unique();
    dns.set('spf.postline.test', 'TXT', ['v=spf1 ip4:192.0.2.10 -all']);
    const d = await addVerifiedDomain(acme.live, dns, name);

    const sending = await findSendingDomain(
      svc.postline.services.db,
      { orgId: acme.orgId, mode: 'live' },
      name,
    );
    expect(sending).not.toBeNull();
    const privateKey = svc.postline.services.secrets.open(sending!.sealedDkimPrivateKey);
    // The key Postline signs with is the key it asks the owner to publish.
    const published = byPurpose(d, 'dkim').value;
    const derived = createPublicKey(privateKey).export({ type: 'spki', format: 'der' }).toString('base64');
    expect(published).toBe(`v=DKIM1; k=rsa; p=${derived}`);
    const message = [
      `From: Acme <hello@${name}>`,
      'To: someone@recipient.test',
      'Subject: Hello',
      `Message-ID: <1@${name}>`,
      'Date: Sun, 01 Mar 2026 00:00:00 +0000',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Signed by Postline.',
      '',
    ].join('\r\n');
    const signed = await dkimSign(message, sign(name, sending!.dkimSelector, privateKey));
    expect(signed.errors).toEqual([]);

    const resolver = mailauthResolver(createResolver([dns.serverAddress]));
    const result = await authenticate(signed.signatures + message, {
      ip: '192.0.2.10',
      helo: 'out.postline.test',
      sender: `bounce-1@${sending!.returnPathDomain}`,
      mta: 'mx.recipient.test',
      resolver,
    });
    // What mailauth was served is the published record (its whitespace removed), and the signature verifies.
    expect(servedRecord(result.dkim.results[0])).toBe(published.replace(/\s+/g, ''));
    expect(result.dkim.results[0].status).toMatchObject({ result: 'pass' });
    expect(result.dkim.results[0].signingDomain).toBe(name);
    expect(result.dkim.results[0].selector).toBe(byPurpose(d, 'dkim').name.split('.')[0]);
    expect(result.spf).toMatchObject({ status: { result: 'pass' } });
    expect(result.dmarc).toMatchObject({ status: { result: 'pass' } });

    // A different key under the same selector fails: the check is real.
    const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    const forged = await dkimSign(message, sign(name, sending!.dkimSelector, stranger));
    const bad = await authenticate(forged.signatures + message, {
      ip: '192.0.2.10',
      helo: 'x',
      sender: `b@${sending!.returnPathDomain}`,
      mta: 'mx',
      resolver,
    });
    expect(servedRecord(bad.dkim.results[0])).toBe(published.replace(/\s+/g, ''));
    expect(bad.dkim.results[0].status).toMatchObject({ result: 'fail' });
  });
});
