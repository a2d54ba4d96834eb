import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { DomainVerifierProcess } from '../../processes/domain-verifier/domain-verifier.process.ts';
import { domainsDueForCheck } from '../../read-side/domains/domains.queries.ts';
import { useDnsService } from '../support/dns-service.ts';
import { publishDomainRecords } from '../support/domains.ts';
import type { TestOrg } from '../support/service.ts';
import { expectValidationErrors } from '../support/validation.ts';

/**
 * Test mode simulates domain verification: `POST /v1/domains/{id}/verify` with `simulate` gives every record that
 * outcome without DNS, for test keys only, and says so in the events. Nothing is published on the DNS server here.
 */

const clock = new ManualClock('2026-03-01T00:00:00Z');
const HOUR = 3600_000;
let acme: TestOrg;
let other: TestOrg;
let verifier: DomainVerifierProcess;

const { svc, dns } = useDnsService({ clock, env: { DOMAIN_RECHECK_INTERVAL_MS: String(6 * HOUR) } });
beforeAll(async () => {
  acme = await svc.createOrg('business');
  other = await svc.createOrg('business');
  verifier = new DomainVerifierProcess(svc.postline.services);
});
beforeEach(() => dns.clear());

let n = 0;
const unique = () => `s${++n}-${Date.now().toString(36)}.example.com`;
const history = (id: string) => svc.postline.services.store.readStream(`domain-${id}`);
const simulate = (client: TestOrg['test'], id: string, outcome: string) =>
  client.post(`/v1/domains/${id}/verify`, { simulate: outcome });

/** The periodic re-check once the interval has passed; then the read model has what it appended. */
async function recheck() {
  clock.advance(6 * HOUR + 1);
  await verifier.runOnce();
  const { store, readYourWrites } = svc.postline.services;
  await readYourWrites.waitFor(['domains'], await store.headPosition({ committed: true }));
}

describe('POST /v1/domains/{id}/verify with simulate (test keys)', () => {
  it('makes a test-mode domain verified without DNS records, the events saying it was simulated', async () => {
    const added = await acme.test.post('/v1/domains', { name: unique(), inbound_enabled: true });
    const r = await simulate(acme.test, added.body.id, 'verified');
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('verified');
    expect(r.body.verified_at).toBe(clock.now().toISOString());
    for (const record of r.body.dns_records) {
      expect(record.status, record.purpose).toBe('verified');
      expect(record.found, record.purpose).toEqual([
        record.type === 'MX' ? `${record.priority} ${record.value}` : record.value,
      ]);
    }
    expect((await acme.test.get(`/v1/domains/${added.body.id}`)).body).toEqual(r.body);
    const events = await history(added.body.id);
    expect(events.map((e) => [e.type, (e.data as { simulated?: true }).simulated])).toEqual([
      ['DomainAdded', undefined],
      ['DomainVerificationChecked', true],
      ['DomainVerified', true],
    ]);
    expect(events[2].metadata).toMatchObject({ orgId: acme.orgId, mode: 'test', actor: expect.any(String) });
  });

  it('simulates records that break: failed, with DomainDnsChanged', async () => {
    const added = await acme.test.post('/v1/domains', { name: unique() });
    await simulate(acme.test, added.body.id, 'verified');
    const r = await simulate(acme.test, added.body.id, 'failed');
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('failed');
    expect(r.body.dns_records.every((x: any) => x.status === 'failed' && x.found.length === 0)).toBe(true);
    const changed = (await history(added.body.id)).at(-1)!;
    expect(changed.type).toBe('DomainDnsChanged');
    expect(changed.data).toMatchObject({ status: 'failed', simulated: true });
  });

  it('keeps the simulation over the periodic re-check; a check without simulate goes back to DNS', async () => {
    const added = await acme.test.post('/v1/domains', { name: unique() });
    await simulate(acme.test, added.body.id, 'verified');
    await recheck();
    expect((await acme.test.get(`/v1/domains/${added.body.id}`)).body.status).toBe('verified');
    const periodic = (await history(added.body.id)).at(-1)!;
    expect(periodic.type).toBe('DomainVerificationChecked');
    expect(periodic.data).toMatchObject({ trigger: 'periodic', status: 'verified', simulated: true });

    const real = await acme.test.post(`/v1/domains/${added.body.id}/verify`);
    expect(real.body.status).toBe('failed');
    const [checked, changed] = (await history(added.body.id)).slice(-2);
    expect(checked.data).not.toHaveProperty('simulated');
    expect(changed.type).toBe('DomainDnsChanged');
    expect(changed.data).not.toHaveProperty('simulated');
    await recheck();
    expect((await history(added.body.id)).at(-1)!.data).not.toHaveProperty('simulated');
  });

  it('claims no name: another organization can still add, re-check and verify it', async () => {
    const name = unique();
    const theirs = await other.live.post('/v1/domains', { name });
    const ours = await acme.test.post('/v1/domains', { name });
    expect((await simulate(acme.test, ours.body.id, 'verified')).body.status).toBe('verified');
    expect((await other.test.post('/v1/domains', { name })).status).toBe(201);
    const due = await domainsDueForCheck(svc.postline.services.db, new Date('2100-01-01'), 10_000);
    expect(due.map((d) => d.id)).toContain(theirs.body.id);
    publishDomainRecords(dns, theirs.body);
    const verified = await other.live.post(`/v1/domains/${theirs.body.id}/verify`);
    expect(verified.status).toBe(200);
    expect(verified.body.status).toBe('verified');
  });

  it('refuses a live key: 403 test_mode_only, nothing recorded', async () => {
    const added = await acme.live.post('/v1/domains', { name: unique() });
    const r = await simulate(acme.live, added.body.id, 'verified');
    expect(r.status).toBe(403);
    expect(r.body.error).toEqual({
      type: 'permission_error',
      code: 'test_mode_only',
      message:
        'Only test-mode domains (pk_test_ keys) can simulate verification; a live domain verifies over DNS.',
    });
    expect((await history(added.body.id)).map((e) => e.type)).toEqual(['DomainAdded']);
    expect((await acme.live.get(`/v1/domains/${added.body.id}`)).body.status).toBe('pending');
  });

  it('validates the body, naming the field', async () => {
    const added = await acme.test.post('/v1/domains', { name: unique() });
    await expectValidationErrors(
      (body) => acme.test.post(`/v1/domains/${added.body.id}/verify`, body),
      [
        [{ simulate: 'pending' }, 'simulate'],
        [{ simulate: true }, 'simulate'],
        [{ outcome: 'verified' }, 'outcome'],
      ],
    );
    expect((await history(added.body.id)).map((e) => e.type)).toEqual(['DomainAdded']);
  });
});
