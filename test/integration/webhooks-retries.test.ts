import { describe, expect, it } from 'vitest';
import { maxAttempts, WEBHOOK_RETRIES } from '../../processes/retry-schedule.ts';
import { AUTO_DISABLE_AFTER_EXHAUSTED } from '../../processes/webhooks/outcomes.ts';
import type { TestOrg } from '../support/service.ts';
import { useWebhookProcesses } from '../support/webhook-processes.ts';
import { appendSentEmail, logMarker } from '../support/webhook-receiver.ts';

const { clock, svc, processes, pump, subscribed } = useWebhookProcesses();

const db = () => svc.postline.services.db;
/** Waits for the webhooks read model to catch up with the dispatcher's own events (disable, exhaustion). */
const projected = async () =>
  svc.postline.services.readYourWrites.waitFor(['webhooks'], await logMarker(svc.postline.services.store));

const emailSent = (org: TestOrg) => appendSentEmail(svc.postline.services.store, org.orgId, clock.now());

const pendingOf = async (webhookId: string) =>
  (
    await db().query<{ id: string; attempts: number; next_attempt_at: Date }>(
      `SELECT id, attempts, next_attempt_at FROM webhook_deliveries WHERE webhook_id = $1 AND status = 'pending' ORDER BY next_attempt_at`,
      [webhookId],
    )
  ).rows;

const streamTypes = async (webhookId: string) =>
  (await svc.postline.services.store.readStream(`webhook-${webhookId}`)).map((e) => e.type);

/** Moves the clock to each next due attempt of the webhook's deliveries until none is pending. */
async function walk(webhookId: string) {
  for (let step = 0; step < 100; step++) {
    const [next] = await pendingOf(webhookId);
    if (!next) return;
    if (next.next_attempt_at > clock.now()) clock.set(next.next_attempt_at);
    await pump();
  }
  throw new Error('the retry schedule did not end');
}

describe('webhook retries', () => {
  it('walks a failing endpoint through 8 attempts on the schedule, with jitter, then exhausts the delivery', async () => {
    const { org, r, wh } = await subscribed();
    r.respond = () => ({ status: 500, body: 'down for maintenance' });
    await emailSent(org);
    await pump();

    for (let attempt = 1; attempt < maxAttempts(WEBHOOK_RETRIES); attempt++) {
      const [row] = await pendingOf(wh.id);
      expect(row.attempts).toBe(attempt);
      const delay = row.next_attempt_at.getTime() - clock.now().getTime();
      const base = WEBHOOK_RETRIES.delaysMs[attempt - 1];
      expect(delay, `delay after attempt ${attempt}`).toBeGreaterThanOrEqual(base * 0.8);
      expect(delay, `delay after attempt ${attempt}`).toBeLessThanOrEqual(base * 1.2);
      clock.advance(delay - 1); // a moment early: nothing is sent
      expect(await processes.dispatcher.runOnce()).toBe(0);
      clock.advance(1);
      expect(await processes.dispatcher.runOnce()).toBe(1);
    }
    expect(await pendingOf(wh.id)).toEqual([]);

    const attempts = r.received.slice(1);
    expect(attempts).toHaveLength(maxAttempts(WEBHOOK_RETRIES));
    expect(new Set(attempts.map((d) => d.id)).size).toBe(1);
    expect(new Set(attempts.map((d) => d.body)).size).toBe(1);
    expect(attempts.every((d) => d.verifiedWith.length === 1)).toBe(true);
    const [delivery] = (await org.live.get(`/v1/webhooks/${wh.id}/deliveries`)).body.data;
    expect(delivery).toMatchObject({ status: 'exhausted', last_response_status: 500, next_attempt_at: null });
    expect(delivery.attempts.map((a: any) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(
      delivery.attempts.every(
        (a: any) => a.response_status === 500 && a.response_excerpt === 'down for maintenance',
      ),
    ).toBe(true);
    const spanHours =
      (Date.parse(delivery.attempts[7].attempted_at) - Date.parse(delivery.attempts[0].attempted_at)) /
      3600_000;
    expect(spanHours).toBeGreaterThan(27.6 * 0.8);
    expect(spanHours).toBeLessThan(27.6 * 1.2);

    expect(await streamTypes(wh.id)).toContain('WebhookDeliveryExhausted');
    const webhook = (await org.live.get(`/v1/webhooks/${wh.id}`)).body;
    expect(webhook).toMatchObject({
      active: true,
      consecutive_failures: 8,
      total_failures: 8,
      disabled_reason: null,
    });
    expect(webhook.last_failure_at).toBe(clock.now().toISOString());
  });

  it(`disables an endpoint after ${AUTO_DISABLE_AFTER_EXHAUSTED} exhausted deliveries in a row, with a reason and an event`, async () => {
    const { org, r, wh } = await subscribed();
    r.respond = () => ({ status: 502 });
    for (let i = 0; i < AUTO_DISABLE_AFTER_EXHAUSTED; i++) await emailSent(org);
    await pump();
    await walk(wh.id);

    const types = await streamTypes(wh.id);
    expect(types.filter((t) => t === 'WebhookDeliveryExhausted')).toHaveLength(AUTO_DISABLE_AFTER_EXHAUSTED);
    expect(types.at(-1)).toBe('WebhookDisabled');
    const disabled = (await svc.postline.services.store.readStream(`webhook-${wh.id}`)).at(-1)!;
    expect(disabled.data).toMatchObject({ reason: 'consecutive_failures' });
    expect(disabled.metadata.actor).toBe('system');
    await projected();
    const webhook = (await org.live.get(`/v1/webhooks/${wh.id}`)).body;
    expect(webhook).toMatchObject({
      active: false,
      disabled_reason: 'consecutive_failures',
      consecutive_failures: 24,
    });

    // Switched off: new events are not fanned out to it. Switched back on: counters start again.
    const before = r.received.length;
    await emailSent(org);
    await pump();
    expect(r.received).toHaveLength(before);
    const enabled = await org.live.patch(`/v1/webhooks/${wh.id}`, { active: true });
    expect(enabled.body).toMatchObject({ active: true, disabled_reason: null, disabled_at: null });
    await pump();
    expect((await org.live.get(`/v1/webhooks/${wh.id}`)).body.consecutive_failures).toBe(0);
  });

  it('disables an endpoint at once when it answers 410 Gone', async () => {
    const { org, r, wh } = await subscribed();
    r.respond = () => ({ status: 410, body: 'gone' });
    await emailSent(org);
    await pump();
    const [delivery] = (await org.live.get(`/v1/webhooks/${wh.id}/deliveries`)).body.data;
    expect(delivery).toMatchObject({ status: 'failed', last_response_status: 410 });
    expect(delivery.attempts).toHaveLength(1);
    expect(await streamTypes(wh.id)).toEqual(['WebhookCreated', 'WebhookDisabled']);
    await projected();
    expect((await org.live.get(`/v1/webhooks/${wh.id}`)).body).toMatchObject({
      active: false,
      disabled_reason: 'endpoint_gone',
    });
    await emailSent(org);
    await pump();
    expect(r.received).toHaveLength(2);
  });

  it('sends none of the deliveries claimed ahead for an endpoint once it answered 410 Gone, and cancels them', async () => {
    const { org, r, wh } = await subscribed();
    // The first request is answered 410 once 16 are in flight (the dispatcher's cap per endpoint); every other one
    // is held until `release`, then answered 200.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = Promise.withResolvers<void>();
    r.respond = async (req) => {
      if (req.id === r.ofType('email.sent')[0].id) {
        await first.promise;
        return { status: 410 };
      }
      await held;
      return { status: 200 };
    };
    for (let i = 0; i < 40; i++) await emailSent(org);
    await processes.fanOut.runOnce();
    const sending = processes.dispatcher.runOnce();
    try {
      await r.waitFor(1 + 16);
      first.resolve();
      const count = async (status: string) =>
        (
          await db().query<{ n: number }>(
            `SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1 AND status = $2`,
            [wh.id, status],
          )
        ).rows[0].n;
      await expect.poll(() => count('canceled')).toBeGreaterThan(0);
      // The 410 freed a slot, which another waiting delivery may have taken before the endpoint was disabled.
      const atDisable = r.ofType('email.sent').length;
      expect(atDisable).toBeLessThanOrEqual(17);
      expect(await count('canceled')).toBe(40 - atDisable);
      release();
      await sending;
      expect(r.ofType('email.sent')).toHaveLength(atDisable);
      expect(await count('failed')).toBe(1);
      expect(await count('succeeded')).toBe(atDisable); // the test event, and those held (all but the 410)
    } finally {
      first.resolve();
      release();
      await sending;
    }
  });

  it('honours Retry-After on 429 and 503, never retrying sooner than the schedule', async () => {
    const { org, r, wh } = await subscribed();
    const delayAfterNextAttempt = async () => {
      const before = clock.now().getTime();
      await pump();
      const [row] = await pendingOf(wh.id);
      clock.set(row.next_attempt_at);
      return row.next_attempt_at.getTime() - before;
    };
    r.respond = () => ({ status: 503, headers: { 'retry-after': '7200' } });
    await emailSent(org);
    expect(await delayAfterNextAttempt()).toBe(7200_000);
    r.respond = () => ({ status: 429, headers: { 'retry-after': '1' } });
    const scheduled = await delayAfterNextAttempt();
    expect(scheduled).toBeGreaterThanOrEqual(WEBHOOK_RETRIES.delaysMs[1] * 0.8);
    expect(scheduled).toBeLessThanOrEqual(WEBHOOK_RETRIES.delaysMs[1] * 1.2);
    const at = new Date(clock.now().getTime() + 3 * 3600_000);
    r.respond = () => ({ status: 429, headers: { 'retry-after': at.toUTCString() } });
    const untilDate = await delayAfterNextAttempt(); // an HTTP date has whole seconds
    expect(untilDate).toBeGreaterThan(3 * 3600_000 - 1000);
    expect(untilDate).toBeLessThanOrEqual(3 * 3600_000);
    r.respond = () => ({ status: 200 });
    await pump();
    expect(await pendingOf(wh.id)).toEqual([]);
    expect(r.received.slice(1).map((d) => d.verifiedWith.length)).toEqual([1, 1, 1, 1]);
  });
});
