import { dkimVerify } from 'mailauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { createResolver, mailauthResolver } from '../../platform/dns.ts';
import { DeliveryProcess } from '../../processes/delivery/delivery.process.ts';
import { DomainVerifierProcess } from '../../processes/domain-verifier/domain-verifier.process.ts';
import { useDnsService } from '../support/dns-service.ts';
import { addVerifiedDomain, publishDomainRecords, recipientDomainOnLoopback } from '../support/domains.ts';
import type { TestOrg } from '../support/service.ts';
import { type SmtpSink, startSmtpSink } from '../support/smtp-sink.ts';

const DAY = 24 * 3600_000;
const clock = new ManualClock('2026-07-01T09:00:00Z');
let mx: SmtpSink;
let acme: TestOrg;
let delivery: DeliveryProcess;
let domain: any;

beforeAll(async () => {
  mx = await startSmtpSink({ starttls: true });
});
const { svc, dns } = useDnsService(() => ({
  clock,
  env: {
    OUTBOUND_SMTP_PORT: String(mx.port),
    OUTBOUND_TLS_REJECT_UNAUTHORIZED: 'false',
    DKIM_RETIRE_AFTER_MS: String(7 * DAY),
    DKIM_ROTATE_AFTER_MS: String(180 * DAY),
  },
}));
beforeAll(async () => {
  recipientDomainOnLoopback(dns, ['rcpt.test']);
  acme = await svc.createOrg('pro');
  domain = await addVerifiedDomain(acme.live, dns, 'rotate.test');
  delivery = new DeliveryProcess(svc.postline.services);
});
afterAll(async () => {
  await delivery?.stop();
  await mx?.close();
});

/** Sends one email and delivers it; the raw message as the receiving server got it. */
async function sendOne(): Promise<Buffer> {
  mx.reset();
  const r = await acme.live.post('/v1/emails', {
    from: 'news@rotate.test',
    to: ['ann@rcpt.test'],
    subject: 'Hi',
    text: 'Hello',
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(await delivery.runOnce()).toBe(1);
  expect(mx.messages).toHaveLength(1);
  return mx.messages[0].raw;
}

/** Each DKIM signature of the message as mailauth verifies it against the loopback DNS: selector and result. */
async function signatures(raw: Buffer) {
  const result = await dkimVerify(raw, { resolver: mailauthResolver(createResolver([dns.serverAddress])) });
  return result.results.map((r: any) => ({ selector: r.selector, result: r.status.result }));
}

const get = async () => (await acme.live.get(`/v1/domains/${domain.id}`)).body;
const verify = async () => (await acme.live.post(`/v1/domains/${domain.id}/verify`)).body;
const keys = (d: any) =>
  d.dkim_keys.map((k: any) => ({ selector: k.selector, status: k.status, signing: k.signing }));

const dkimRecords = (d: any) =>
  d.dns_records
    .filter((r: any) => r.purpose === 'dkim')
    .map((r: any) => ({ name: r.name, required: r.required, rotation: r.rotation, status: r.status }));
const eventTypes = async () =>
  (await svc.postline.services.store.readStream(`domain-${domain.id}`)).map((e) => e.type);

describe('DKIM key rotation against the loopback DNS server', () => {
  it('signs with the old key until the new record verifies, then with the new; both verify during the overlap', async () => {
    const oldSelector = domain.dkim_keys[0].selector;
    const beforeRotation = await sendOne();
    expect(await signatures(beforeRotation)).toEqual([{ selector: oldSelector, result: 'pass' }]);

    const rotated = await acme.live.post(`/v1/domains/${domain.id}/dkim/rotate`);
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    const newSelector = rotated.body.dkim_keys.find((k: any) => k.status === 'pending').selector;
    expect(newSelector).not.toBe(oldSelector);
    expect(keys(rotated.body)).toEqual([
      { selector: oldSelector, status: 'active', signing: true },
      { selector: newSelector, status: 'pending', signing: false },
    ]);
    const newRecord = rotated.body.dns_records.find((r: any) => r.rotation === 'pending');
    expect(newRecord).toMatchObject({
      type: 'TXT',
      name: `${newSelector}._domainkey.rotate.test`,
      purpose: 'dkim',
      required: false,
      status: 'pending',
    });
    expect(newRecord.value).toMatch(/^v=DKIM1; k=rsa; p=/);

    // One rotation at a time.
    const again = await acme.live.post(`/v1/domains/${domain.id}/dkim/rotate`);
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'conflict' });

    // The new record is not published yet: the check fails it, the old key keeps signing, the domain stays verified.
    const notYet = await verify();
    expect(notYet.status).toBe('verified');
    expect(keys(notYet)).toEqual(keys(rotated.body));
    expect(await signatures(await sendOne())).toEqual([{ selector: oldSelector, result: 'pass' }]);

    // Published and verified: the new key signs, the old record is retiring (no longer required).
    publishDomainRecords(dns, rotated.body, (r) => r.name === newRecord.name);
    const switched = await verify();
    expect(switched.status).toBe('verified');
    expect(keys(switched)).toEqual([
      { selector: oldSelector, status: 'retiring', signing: false },
      { selector: newSelector, status: 'active', signing: true },
    ]);
    const retiring = switched.dkim_keys.find((k: any) => k.status === 'retiring');
    expect(retiring.removable_after).toBe(new Date(clock.now().getTime() + 7 * DAY).toISOString());
    expect(dkimRecords(switched)).toEqual([
      {
        name: `${oldSelector}._domainkey.rotate.test`,
        required: false,
        rotation: 'retiring',
        status: 'verified',
      },
      {
        name: `${newSelector}._domainkey.rotate.test`,
        required: true,
        rotation: undefined,
        status: 'verified',
      },
    ]);
    const afterSwitch = await sendOne();
    expect(await signatures(afterSwitch)).toEqual([{ selector: newSelector, result: 'pass' }]);
    // Mail signed with the old key before the switch still verifies: its record is still published.
    expect(await signatures(beforeRotation)).toEqual([{ selector: oldSelector, result: 'pass' }]);

    // Within the grace period the old record stays retiring; after it, it is flagged removable.
    clock.advance(7 * DAY - 1000);
    expect(keys(await verify())[0].status).toBe('retiring');
    clock.advance(1000);
    const removable = await verify();
    expect(keys(removable)[0]).toEqual({ selector: oldSelector, status: 'removable', signing: false });
    expect(dkimRecords(removable)[0].rotation).toBe('removable');

    // Once deleted from DNS it leaves the list, and no DNS change is reported for it.
    dns.remove(`${oldSelector}._domainkey.rotate.test`, 'TXT');
    const gone = await verify();
    expect(gone.status).toBe('verified');
    expect(keys(gone)).toEqual([{ selector: newSelector, status: 'active', signing: true }]);
    expect(await signatures(await sendOne())).toEqual([{ selector: newSelector, result: 'pass' }]);

    const types = await eventTypes();
    expect(types.filter((t) => t.startsWith('DomainDkim'))).toEqual([
      'DomainDkimRotationStarted',
      'DomainDkimKeyActivated',
      'DomainDkimKeyRemovable',
    ]);
    expect(types).not.toContain('DomainDnsChanged');
  });

  it('rotates automatically once the signing key is older than DKIM_ROTATE_AFTER_MS', async () => {
    const verifier = new DomainVerifierProcess(svc.postline.services);
    const { store, readYourWrites } = svc.postline.services;
    const started = async () =>
      (await store.readStream(`domain-${domain.id}`)).filter((e) => e.type === 'DomainDkimRotationStarted');
    const tick = async () => {
      clock.advance(svc.postline.services.config.DOMAIN_RECHECK_INTERVAL_MS + 1);
      await verifier.runOnce();
      await readYourWrites.waitFor(['domains'], await store.headPosition({ committed: true }));
    };
    await tick(); // the signing key is days old: no rotation
    expect(await started()).toHaveLength(1);
    clock.advance(180 * DAY);
    await tick();
    const all = await started();
    expect(all).toHaveLength(2);
    expect(all[1].data).toMatchObject({ trigger: 'scheduled' });
    expect(keys(await get()).map((k: any) => k.status)).toEqual(['active', 'pending']);
    await verifier.stop();
  });

  it('signs with Ed25519 beside RSA once its record verifies; both signatures verify (RFC 8463)', async () => {
    const dual = await addVerifiedDomain(acme.live, dns, 'dual.test');
    const rsa = dual.dkim_keys[0].selector;
    const added = await acme.live.post(`/v1/domains/${dual.id}/dkim/ed25519`);
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    const ed = added.body.dkim_keys.find((k: any) => k.algorithm === 'ed25519');
    expect(ed).toMatchObject({ status: 'pending', signing: false });
    const record = added.body.dns_records.find((r: any) => r.name === `${ed.selector}._domainkey.dual.test`);
    expect(record).toMatchObject({ required: false, rotation: 'pending' });
    expect(record.value).toMatch(/^v=DKIM1; k=ed25519; p=[A-Za-z0-9+/]{43}=$/);
    expect((await acme.live.post(`/v1/domains/${dual.id}/dkim/ed25519`)).status).toBe(409);

    const sendFromDual = async () => {
      mx.reset();
      const r = await acme.live.post('/v1/emails', {
        from: 'a@dual.test',
        to: ['ann@rcpt.test'],
        subject: 'x',
        text: 'y',
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(await delivery.runOnce()).toBe(1);
      return mx.messages[0].raw;
    };
    // Not published yet: RSA alone.
    expect(await signatures(await sendFromDual())).toEqual([{ selector: rsa, result: 'pass' }]);

    publishDomainRecords(dns, added.body, (r) => r.name === record.name);
    const verified = (await acme.live.post(`/v1/domains/${dual.id}/verify`)).body;
    expect(verified.status).toBe('verified');
    expect(
      verified.dkim_keys.map((k: any) => ({
        selector: k.selector,
        algorithm: k.algorithm,
        status: k.status,
        signing: k.signing,
      })),
    ).toEqual([
      { selector: rsa, algorithm: 'rsa', status: 'active', signing: true },
      { selector: ed.selector, algorithm: 'ed25519', status: 'active', signing: true },
    ]);
    const raw = await sendFromDual();
    const both = await signatures(raw);
    expect(both.sort((a: any, b: any) => a.selector.localeCompare(b.selector))).toEqual(
      [
        { selector: rsa, result: 'pass' },
        { selector: ed.selector, result: 'pass' },
      ].sort((a, b) => a.selector.localeCompare(b.selector)),
    );
    expect(raw.toString()).toMatch(/a=ed25519-sha256/);
    expect(raw.toString()).toMatch(/a=rsa-sha256/);
    const types = (await svc.postline.services.store.readStream(`domain-${dual.id}`)).map((e) => e.type);
    expect(types.filter((t) => t.startsWith('DomainDkim'))).toEqual([
      'DomainDkimEd25519Added',
      'DomainDkimEd25519Activated',
    ]);
  });

  it('answers 404 for an unknown domain', async () => {
    const r = await acme.live.post('/v1/domains/dom_unknown/dkim/rotate');
    expect(r.status).toBe(404);
    expect(r.body.error).toMatchObject({ code: 'not_found' });
    expect((await acme.live.post('/v1/domains/dom_unknown/dkim/ed25519')).status).toBe(404);
  });
});
