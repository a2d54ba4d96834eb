import { beforeAll, describe, expect, it } from 'vitest';
import { SEND_TIME_RULE } from '../../domain/emails/send-time.ts';
import { ManualClock } from '../../platform/clock.ts';
import { SchedulerProcess } from '../../processes/scheduler/scheduler.process.ts';
import { SimulatorProcess } from '../../processes/simulator/simulator.process.ts';
import { cancelEmail } from '../../write-side/emails/email.commands.ts';
import { emailEventTypes, readEmail } from '../support/emails.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

let acme: TestOrg;
let scheduler: SchedulerProcess;
const clock = new ManualClock('2026-05-01T08:00:00Z');

const svc = useTestService(() => ({ clock }));
beforeAll(async () => {
  acme = await svc.createOrg('pro');
  scheduler = new SchedulerProcess(svc.postline.services);
});

const at = (minutes: number) => new Date(clock.now().getTime() + minutes * 60_000).toISOString();
const send = (sendAt: string) =>
  acme.test.post('/v1/emails', {
    from: 'x@acme.test',
    to: ['ann@example.org'],
    subject: 'Later',
    text: 'hi',
    send_at: sendAt,
  });
const status = async (id: string) => (await readEmail(svc, acme.test, id)).status;
const types = (id: string) => emailEventTypes(svc, id);

describe('scheduler', () => {
  it('releases a scheduled email at its time, not before', async () => {
    const r = await send(at(30));
    expect(r.body.status).toBe('scheduled');
    expect(await scheduler.runOnce()).toBe(0);
    clock.advance(29 * 60_000);
    expect(await scheduler.runOnce()).toBe(0);
    clock.advance(60_000);
    expect(await scheduler.runOnce()).toBe(1);
    expect(await types(r.body.id)).toEqual(['EmailScheduled', 'EmailReleased']);
    expect(await status(r.body.id)).toBe('queued');
    // Then it is sent like any queued email (test mode: the simulator).
    const simulator = new SimulatorProcess(svc.postline.services);
    await simulator.runOnce();
    clock.advance(2000);
    await simulator.runOnce();
    expect(await status(r.body.id)).toBe('delivered');
  });

  it('follows a reschedule and skips a canceled email', async () => {
    const moved = await send(at(10));
    const canceled = await send(at(10));
    await scheduler.runOnce();
    await acme.test.patch(`/v1/emails/${moved.body.id}`, { send_at: at(60) });
    await acme.test.post(`/v1/emails/${canceled.body.id}/cancel`);
    clock.advance(11 * 60_000);
    expect(await scheduler.runOnce()).toBe(0);
    expect(await types(canceled.body.id)).toEqual(['EmailScheduled', 'EmailCanceled']);
    clock.advance(50 * 60_000);
    expect(await scheduler.runOnce()).toBe(1);
    expect(await types(moved.body.id)).toEqual(['EmailScheduled', 'EmailRescheduled', 'EmailReleased']);
    expect((await acme.test.post(`/v1/emails/${moved.body.id}/cancel`)).status).toBe(409);
  });

  it('takes the time in words (send_at or scheduled_at), read at the request in UTC, and keeps the instant', async () => {
    const r = await send('in 30 min');
    expect(r.status).toBe(200);
    expect((await readEmail(svc, acme.test, r.body.id)).send_at).toBe(at(30));
    const resend = await acme.test.post('/v1/emails', {
      from: 'x@acme.test',
      to: ['ann@example.org'],
      subject: 'Later',
      text: 'hi',
      scheduled_at: 'in 45 minutes',
    });
    expect((await readEmail(svc, acme.test, resend.body.id)).send_at).toBe(at(45));
    await scheduler.runOnce();
    const moved = await acme.test.patch(`/v1/emails/${resend.body.id}`, { scheduled_at: 'in 2 hours' });
    expect(moved.status).toBe(200);
    expect((await readEmail(svc, acme.test, resend.body.id)).send_at).toBe(at(120));
    clock.advance(30 * 60_000);
    expect(await scheduler.runOnce()).toBe(1);
    expect(await types(r.body.id)).toEqual(['EmailScheduled', 'EmailReleased']);
    expect(await types(resend.body.id)).toEqual(['EmailScheduled', 'EmailRescheduled']);
  });

  it.each([
    ['in 1 hour please', `\`send_at\`: ${SEND_TIME_RULE}`],
    ['yesterday', '`send_at`: must be in the future'],
    ['in 31 days', '`send_at`: must be at most 30 days ahead'],
  ])('refuses %j with what it takes, and schedules nothing', async (words, message) => {
    const before = await acme.test.get('/v1/emails?limit=100');
    const r = await send(words);
    expect(r.status).toBe(422);
    expect(r.body.error).toMatchObject({ code: 'validation_error', message });
    const patched = await acme.test.patch(`/v1/emails/${before.body.data[0].id}`, { send_at: words });
    expect(patched.body.error?.message).toBe(message);
    expect((await acme.test.get('/v1/emails?limit=100')).body.data).toHaveLength(before.body.data.length);
  });

  it('releases each email once with several schedulers at work', async () => {
    const ids = [];
    for (let i = 0; i < 20; i++) ids.push((await send(at(5))).body.id);
    clock.advance(6 * 60_000);
    const others = [1, 2, 3].map(() => new SchedulerProcess(svc.postline.services));
    const counts = await Promise.all([scheduler, ...others].map((s) => s.runOnce()));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(20);
    for (const id of ids) expect((await types(id)).filter((t) => t === 'EmailReleased')).toHaveLength(1);
  });

  it('settles cancel racing the scheduler through the stream revision: exactly one wins', async () => {
    const results: string[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await send(at(1));
      await scheduler.runOnce();
      clock.advance(2 * 60_000);
      const auth = {
        orgId: acme.orgId,
        mode: 'test' as const,
        keyId: 'key_race',
        plan: 'pro' as const,
        permission: 'full_access' as const,
        domainId: null,
      };
      const [released, cancel] = await Promise.allSettled([
        scheduler.runOnce(),
        cancelEmail(svc.postline.services, auth, r.body.id),
      ]);
      const history = await types(r.body.id);
      const last = history.at(-1);
      expect(['EmailReleased', 'EmailCanceled']).toContain(last);
      expect(history.filter((t) => t === 'EmailReleased' || t === 'EmailCanceled')).toHaveLength(1);
      if (last === 'EmailCanceled') expect(cancel.status).toBe('fulfilled');
      else {
        expect(released.status).toBe('fulfilled');
        expect(cancel.status).toBe('rejected');
        expect((cancel as PromiseRejectedResult).reason.code).toBe('email_not_scheduled');
      }
      results.push(last!);
    }
    expect(results).toHaveLength(10);
  });
});
