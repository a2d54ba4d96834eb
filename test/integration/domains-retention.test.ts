import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { RetentionProcess } from '../../processes/retention/retention.process.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { addVerifiedDomain, domainEnv } from '../support/domains.ts';
import { startTestService, type TestOrg, type TestService } from '../support/service.ts';

let dns: TestDnsServer;
let svc: TestService;
let clock: ManualClock;
let acme: TestOrg;
let other: TestOrg;
let retention: RetentionProcess;

const DAY = 24 * 3600_000;

beforeAll(async () => {
  dns = await startDnsServer();
  clock = new ManualClock('2026-04-01T00:00:00Z');
  svc = await startTestService({ clock, env: domainEnv(dns) });
  acme = await svc.createOrg('free');
  other = await svc.createOrg('free');
  retention = new RetentionProcess(svc.postline.services);
});
afterAll(async () => {
  await svc?.close();
  await dns?.close();
});

async function runRetention() {
  const result = await retention.tick();
  await svc.postline.services.readYourWrites.waitFor(['domains'], result.position);
  return result.count;
}

describe('retention of deleted domains', () => {
  it('purges a deleted domain after 30 days, and only then frees its name', async () => {
    const name = `r-${Date.now().toString(36)}.example.com`;
    const d = await addVerifiedDomain(acme.live, dns, name);
    const del = await acme.live.delete(`/v1/domains/${d.id}`);
    expect(del.body).toEqual({ id: d.id, deleted: true });
    const deletedAt = clock.now().getTime();

    // Within the grace period: the name stays taken, for this organization and (it was verified) for others.
    clock.set(new Date(deletedAt + 30 * DAY - 1000));
    expect(await runRetention()).toBe(0);
    expect((await acme.live.post('/v1/domains', { name })).status).toBe(409);
    expect((await other.live.post('/v1/domains', { name })).status).toBe(409);
    const { rows: kept } = await svc.postline.services.db.query(
      'SELECT deleted_at FROM domains WHERE id = $1',
      [d.id],
    );
    expect(kept).toHaveLength(1);

    clock.set(new Date(deletedAt + 30 * DAY));
    expect(await runRetention()).toBe(1);
    const { rows: gone } = await svc.postline.services.db.query('SELECT id FROM domains WHERE id = $1', [
      d.id,
    ]);
    expect(gone).toHaveLength(0);
    const events = await svc.postline.services.store.readStream(`domain-${d.id}`);
    expect(events.at(-1)).toMatchObject({
      type: 'DomainPurged',
      data: { domainId: d.id, name, purgedAt: clock.now().toISOString() },
      metadata: { orgId: acme.orgId, mode: 'live', actor: 'system' },
    });
    expect(await runRetention()).toBe(0);

    const again = await other.live.post('/v1/domains', { name });
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(d.id);
  });

  it('leaves domains that are not deleted alone', async () => {
    const org = await svc.createOrg('pro');
    const d = await org.live.post('/v1/domains', { name: `keep-${Date.now().toString(36)}.example.com` });
    clock.advance(365 * DAY);
    await runRetention();
    expect((await org.live.get(`/v1/domains/${d.body.id}`)).status).toBe(200);
  });
});
