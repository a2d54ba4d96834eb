import { describe, expect, it } from 'vitest';
import { quotaStream } from '../../domain/emails/quota.decider.ts';
import { ManualClock } from '../../platform/clock.ts';
import { changePlan } from '../../write-side/organizations/organization.commands.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

/** A manual clock that, while `ticking`, moves on a millisecond at each reading: no two readings are the same. */
class TickingClock extends ManualClock {
  ticking = false;
  override now(): Date {
    if (this.ticking) this.advance(1);
    return super.now();
  }
}

const clock = new TickingClock('2026-03-10T12:00:00Z');
const svc = useTestService({ clock });

const email = () => ({
  from: 'x@quota.test',
  to: ['delivered@simulator.postline.dev'],
  subject: 'Hi',
  html: '<p>Hi</p>',
});
const batchOf = (n: number) => Array.from({ length: n }, email);

async function moveTo(org: TestOrg, plan: 'free' | 'pro') {
  const { position } = await changePlan(svc.postline.services, org.orgId, plan);
  await svc.postline.services.readYourWrites.waitFor(['api_keys'], position);
}

describe('the monthly quota across a change of plan', () => {
  it('counts what an organization sent this month on Pro once it is moved to Free', async () => {
    const org = await svc.createOrg('pro');
    const sent = await org.test.post('/v1/emails/batch', batchOf(90));
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    await moveTo(org, 'free');
    // 90 of Free's 100 are used: a batch of 15 gets 10 through.
    const batch = await org.test.post('/v1/emails/batch', batchOf(15));
    const outcomes = batch.body.data.map((i: any) => i.status ?? i.error.code);
    expect(outcomes.filter((o: string) => o === 'queued')).toHaveLength(10);
    expect(outcomes.filter((o: string) => o === 'monthly_quota_exceeded')).toHaveLength(5);
    const over = await org.test.post('/v1/emails', email());
    expect([over.status, over.body.error?.code]).toEqual([429, 'monthly_quota_exceeded']);
    expect((await org.test.get('/v1/usage')).body).toMatchObject({
      plan: 'free',
      emails: 100,
      included: 100,
    });
    // The live mode has a count of its own.
    expect((await org.live.get('/v1/usage')).body.emails).toBe(0);
  });

  it('counts a month on Free, then Pro, then Free again as one month', async () => {
    const org = await svc.createOrg('free');
    expect((await org.test.post('/v1/emails/batch', batchOf(40))).status).toBe(200);
    await moveTo(org, 'pro');
    expect((await org.test.post('/v1/emails/batch', batchOf(50))).status).toBe(200);
    await moveTo(org, 'free');
    const batch = await org.test.post('/v1/emails/batch', batchOf(20));
    const queued = batch.body.data.filter((i: any) => i.status === 'queued');
    expect(queued).toHaveLength(10);
    expect((await org.test.get('/v1/usage')).body.emails).toBe(100);
  });
});

describe('GET /v1/usage', () => {
  it('refuses a month that is no calendar month with 422 naming `month`', async () => {
    const org = await svc.createOrg('pro');
    for (const month of ['2026-13', '2026-00', '0000-01', '2026-3', 'March']) {
      const r = await org.live.get(`/v1/usage?month=${month}`);
      expect(r.status, `${month} -> ${JSON.stringify(r.body)}`).toBe(422);
      expect(r.body.error).toMatchObject({ type: 'validation_error', code: 'validation_error' });
      expect(r.body.error.message).toContain('`month`');
    }
    expect((await org.live.get('/v1/usage?month=2025-12')).body).toMatchObject({
      month: '2025-12',
      emails: 0,
    });
  });
});

describe('a past month', () => {
  it('is figured on the plan the organization was on at its end; the month under way on today’s', async () => {
    const org = await svc.createOrg('pro');
    expect((await org.test.post('/v1/emails/batch', batchOf(3))).status).toBe(200);
    clock.set('2026-04-02T09:00:00Z');
    await moveTo(org, 'free');
    expect((await org.test.get('/v1/usage?month=2026-03')).body).toEqual({
      object: 'usage',
      month: '2026-03',
      mode: 'test',
      plan: 'pro',
      emails: 3,
      included: 50_000,
      overage: 0,
      overage_cost_eur: 0,
    });
    expect((await org.test.get('/v1/usage')).body).toMatchObject({
      month: '2026-04',
      plan: 'free',
      emails: 0,
      included: 100,
      overage_cost_eur: null,
    });
    // Before the organization existed: today's plan, nothing sent.
    expect((await org.test.get('/v1/usage?month=2026-01')).body).toMatchObject({ plan: 'free', emails: 0 });
  });
});

describe('the month an email counts in', () => {
  it('is the one its quota is taken in: a batch is accepted as of one time, at the end of a month too', async () => {
    const org = await svc.createOrg('free');
    clock.set('2026-04-30T23:59:59.990Z');
    clock.ticking = true;
    const r = await org.test.post('/v1/emails/batch', batchOf(20)).finally(() => {
      clock.ticking = false;
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const created = new Set<string>();
    for (const { id } of r.body.data) created.add((await org.test.get(`/v1/emails/${id}`)).body.created_at);
    expect(created.size).toBe(1);
    const month = [...created][0].slice(0, 7);
    const grants = await svc.postline.services.store.readStream(quotaStream(org.orgId, 'test', month));
    expect(grants.map((e) => (e.data as { granted: number }).granted)).toEqual([20]);
    expect((await org.test.get(`/v1/usage?month=${month}`)).body.emails).toBe(20);
  });
});
