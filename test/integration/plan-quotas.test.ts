import { describe, expect, it } from 'vitest';
import { planSlotStream } from '../../domain/plan-slots/plan-slot.events.ts';
import { webhookDecider } from '../../domain/webhooks/webhook.decider.ts';
import { webhookStream } from '../../domain/webhooks/webhook.events.ts';
import { ManualClock } from '../../platform/clock.ts';
import { handleCommand } from '../../platform/eventstore/command.ts';
import type { EventMetadata } from '../../platform/eventstore/types.ts';
import { takeSlot } from '../../write-side/plan-slots/plan-slot.commands.ts';
import { createWebhook, WEBHOOK_SLOTS } from '../../write-side/webhooks/webhook.commands.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

const clock = new ManualClock(new Date());

const svc = useTestService(() => ({ clock }));

let n = 0;
const unique = () => `q${++n}-${Date.now().toString(36)}.example.com`;
const template = { name: 'Welcome', subject: 'Hi there', text: 'Hi', engine: 'handlebars' };
const webhook = { url: 'https://hooks.example.com/in', events: ['email.*'] };
const meta = (org: TestOrg): EventMetadata => ({ orgId: org.orgId, mode: 'live', actor: 'test' });

/** Fires `count` requests at once; expects exactly one 201 and the rest 422 plan_limit_exceeded. */
async function race(post: () => Promise<{ status: number; body: any }>, message: RegExp, count = 5) {
  const answers = await Promise.all(Array.from({ length: count }, post));
  const ok = answers.filter((r) => r.status === 201);
  const refused = answers.filter((r) => r.status !== 201);
  expect(ok.length, JSON.stringify(answers.map((r) => [r.status, r.body?.error?.code]))).toBe(1);
  for (const r of refused) {
    expect(r.status).toBe(422);
    expect(r.body.error).toMatchObject({ type: 'quota_error', code: 'plan_limit_exceeded' });
    expect(r.body.error.message).toMatch(message);
  }
  return ok[0].body;
}

describe('plan limits under concurrent creates', () => {
  it('domains: one of five parallel creates gets the Free slot; deleting frees it', async () => {
    const free = await svc.createOrg('free');
    const winner = await race(
      () => free.live.post('/v1/domains', { name: unique() }),
      /^The free plan includes 1 domain; delete one or upgrade the plan\.$/,
    );
    expect((await free.live.get('/v1/domains')).body.data).toHaveLength(1);
    expect((await free.live.delete(`/v1/domains/${winner.id}`)).status).toBe(200);
    await race(() => free.live.post('/v1/domains', { name: unique() }), /free plan includes 1 domain/);
  });

  it('templates: one of five parallel creates gets the last Free slot; duplicates race too', async () => {
    const free = await svc.createOrg('free');
    for (let i = 0; i < 4; i++) {
      const r = await free.live.post('/v1/templates', template);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    const fifth = await race(
      () => free.live.post('/v1/templates', template),
      /^The free plan allows 5 templates; delete one or upgrade the plan\.$/,
    );
    expect((await free.live.get('/v1/templates?limit=100')).body.data).toHaveLength(5);
    expect((await free.live.delete(`/v1/templates/${fifth.id}`)).status).toBe(200);
    const list = (await free.live.get('/v1/templates?limit=100')).body.data;
    await race(() => free.live.post(`/v1/templates/${list[0].id}/duplicate`), /free plan allows 5 templates/);
    expect((await free.live.get('/v1/templates?limit=100')).body.data).toHaveLength(5);
  });

  it('webhooks: one of five parallel creates gets the Free slot; deleting frees it', async () => {
    const free = await svc.createOrg('free');
    const winner = await race(
      () => free.live.post('/v1/webhooks', webhook),
      /^Your plan allows 1 webhook endpoint; delete one or upgrade\.$/,
    );
    expect((await free.live.get('/v1/webhooks')).body.data).toHaveLength(1);
    expect((await free.live.delete(`/v1/webhooks/${winner.id}`)).status).toBe(200);
    await race(() => free.live.post('/v1/webhooks', webhook), /allows 1 webhook endpoint/);
  });

  it('keeps modes apart', async () => {
    const free = await svc.createOrg('free');
    await race(() => free.live.post('/v1/webhooks', webhook), /1 webhook endpoint/);
    await race(() => free.test.post('/v1/webhooks', webhook), /1 webhook endpoint/);
  });
});

describe('plan slots', () => {
  it('count the resources that existed before the slot stream (seeded from the read model)', async () => {
    const free = await svc.createOrg('free');
    // Written as before plan slots: no slot taken.
    const old = await createWebhook(svc.postline.services, meta(free), 'free', 0, {
      ...webhook,
      active: true,
    });
    await svc.postline.services.readYourWrites.waitFor(['webhooks'], old.position);
    expect(
      await svc.postline.services.store.readStream(planSlotStream('webhooks', free.orgId, 'live')),
    ).toEqual([]);
    expect((await free.live.post('/v1/webhooks', webhook)).body.error.code).toBe('plan_limit_exceeded');
    expect((await free.live.delete(`/v1/webhooks/${old.webhookId}`)).status).toBe(200);
    expect((await free.live.post('/v1/webhooks', webhook)).status).toBe(201);
  });

  it('give a slot back at once when the create is refused', async () => {
    const free = await svc.createOrg('free');
    const name = unique();
    expect((await free.live.post('/v1/domains', { name })).status).toBe(201);
    const other = await svc.createOrg('free');
    const first = await other.live.post('/v1/domains', { name: unique() });
    await other.live.delete(`/v1/domains/${first.body.id}`);
    // The deleted domain keeps its name until purged: 409, and the slot is not kept.
    expect((await other.live.post('/v1/domains', { name: first.body.name })).status).toBe(409);
    expect((await other.live.post('/v1/domains', { name: unique() })).status).toBe(201);

    for (let i = 0; i < 4; i++) {
      const r = await free.live.post('/v1/templates', template);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    const invalid = await free.live.post('/v1/templates', { ...template, html: '<p>{{#if x}}</p>' });
    expect(invalid.body.error.code).toBe('validation_error');
    expect((await free.live.post('/v1/templates', template)).status).toBe(201);
  });

  it('count a slot whose resource was never written as free once it is a few minutes old (a crash)', async () => {
    const free = await svc.createOrg('free');
    await takeSlot(svc.postline.services, meta(free), WEBHOOK_SLOTS, 'wh_crashed', 1, 'full');
    expect((await free.live.post('/v1/webhooks', webhook)).body.error.code).toBe('plan_limit_exceeded');
    clock.advance(6 * 60_000);
    expect((await free.live.post('/v1/webhooks', webhook)).status).toBe(201);
  });

  it('count a slot whose resource was deleted as free (a crash between delete and free)', async () => {
    const free = await svc.createOrg('free');
    const created = await free.live.post('/v1/webhooks', webhook);
    await handleCommand(
      svc.postline.services.store,
      webhookStream(created.body.id),
      webhookDecider,
      {
        type: 'DeleteWebhook',
        webhookId: created.body.id,
        orgId: free.orgId,
        mode: 'live',
        at: clock.now().toISOString(),
      },
      meta(free),
    );
    expect((await free.live.post('/v1/webhooks', webhook)).status).toBe(201);
  });
});
