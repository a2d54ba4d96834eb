import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { newId } from '../../platform/ids.ts';
import { RetentionProcess } from '../../processes/retention/retention.process.ts';
import { WebhookDispatcher } from '../../processes/webhooks/dispatcher.process.ts';
import { WebhookFanOut } from '../../processes/webhooks/fan-out.process.ts';
import { type TestOrg, useTestService } from '../support/service.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const DAY = 86_400_000;
const clock = new ManualClock('2026-03-01T00:00:00Z');
// Kept 7 days here (30 by default), to show the setting is read.
const svc = useTestService(() => ({ clock, env: { WEBHOOK_DELIVERY_RETENTION_DAYS: '7' } }));
let fanOut: WebhookFanOut;
let dispatcher: WebhookDispatcher;
let retention: RetentionProcess;
const receivers: WebhookReceiver[] = [];

beforeAll(() => {
  fanOut = new WebhookFanOut(svc.postline.services);
  dispatcher = new WebhookDispatcher(svc.postline.services);
  retention = new RetentionProcess(svc.postline.services);
});
afterAll(async () => {
  await dispatcher?.stop();
  await Promise.all(receivers.map((r) => r.close()));
});

const pump = async () => {
  await fanOut.runOnce();
  await dispatcher.runOnce();
};

/** A webhook of a new organization to a receiver answering `status`; its test event is attempted once. */
async function endpointAnswering(status: number) {
  const org = await svc.createOrg('pro');
  const r = await startWebhookReceiver({ clock });
  receivers.push(r);
  r.respond = () => ({ status });
  const wh = await r.subscribe(org.live, ['email.sent']);
  await pump();
  return { org, wh, r };
}

const log = async (org: TestOrg, webhookId: string) =>
  (await org.live.get(`/v1/webhooks/${webhookId}/deliveries?limit=100`)).body.data as any[];

const attemptsOf = async (deliveryId: string) =>
  (
    await svc.postline.services.db.query(
      'SELECT count(*)::int AS n FROM webhook_attempts WHERE delivery_id = $1',
      [deliveryId],
    )
  ).rows[0].n as number;

describe('retention of webhook deliveries', () => {
  it('deletes ended deliveries and their attempts WEBHOOK_DELIVERY_RETENTION_DAYS after they ended; pending ones stay', async () => {
    const succeeded = await endpointAnswering(200);
    const gone = await endpointAnswering(410);
    const failing = await endpointAnswering(500);
    // The failing endpoint's test event is retried until its 8 attempts are used up (about 28 hours).
    for (let i = 0; i < 8; i++) {
      clock.advance(13 * 3600_000);
      await pump();
    }
    // One more endpoint, whose delivery is retrying (pending) when the others have long ended.
    const retrying = await endpointAnswering(500);

    const [ok] = await log(succeeded.org, succeeded.wh.id);
    const [failed] = await log(gone.org, gone.wh.id);
    const [exhausted] = await log(failing.org, failing.wh.id);
    const [pending] = await log(retrying.org, retrying.wh.id);
    expect([ok.status, failed.status, exhausted.status, pending.status]).toEqual([
      'succeeded',
      'failed',
      'exhausted',
      'pending',
    ]);
    expect(exhausted.attempts).toHaveLength(8);
    expect(pending.attempts).toHaveLength(1);

    // One second short of 7 days after the exhaustion: the two that ended a day and more before it go.
    const exhaustedAt = new Date(exhausted.completed_at).getTime();
    clock.set(new Date(exhaustedAt + 7 * DAY - 1000));
    expect(await retention.runOnce()).toBe(2);
    expect(await log(succeeded.org, succeeded.wh.id)).toEqual([]);
    expect(await log(gone.org, gone.wh.id)).toEqual([]);
    expect([await attemptsOf(ok.id), await attemptsOf(failed.id)]).toEqual([0, 0]);
    expect((await log(failing.org, failing.wh.id)).map((d) => d.id)).toEqual([exhausted.id]);
    // A delivery that is gone can no longer be retried: it is not found, as any unknown id.
    const retry = await succeeded.org.live.post(`/v1/webhooks/${succeeded.wh.id}/deliveries/${ok.id}/retry`);
    expect([retry.status, retry.body.error.code]).toEqual([404, 'not_found']);

    clock.set(new Date(exhaustedAt + 7 * DAY));
    expect(await retention.runOnce()).toBe(1);
    expect(await log(failing.org, failing.wh.id)).toEqual([]);
    expect(await attemptsOf(exhausted.id)).toBe(0);

    // A delivery still being retried is never deleted, however old, nor are its attempts.
    clock.advance(365 * DAY);
    expect(await retention.runOnce()).toBe(0);
    const [still] = await log(retrying.org, retrying.wh.id);
    expect(still).toMatchObject({ id: pending.id, status: 'pending' });
    expect(await attemptsOf(pending.id)).toBe(1);
    // The webhook itself and its delivery health are not part of the log's retention.
    const webhook = (await succeeded.org.live.get(`/v1/webhooks/${succeeded.wh.id}`)).body;
    expect(webhook).toMatchObject({ id: succeeded.wh.id, active: true });
    expect(webhook.last_success_at).not.toBeNull();
  });

  it('deletes a backlog larger than one batch in one run, a batch at a time', async () => {
    const { org, wh } = await endpointAnswering(200);
    const { db } = svc.postline.services;
    const endedAt = new Date(clock.now().getTime() - 8 * DAY);
    const ids = Array.from({ length: 2500 }, () => newId('whl', endedAt.getTime()));
    await db.query(
      `INSERT INTO webhook_deliveries (webhook_id, id, org_id, mode, source_key, event_type, body, status, attempts,
         next_attempt_at, created_at, updated_at, completed_at)
       SELECT $1, id, $2, 'live', 'email-x@' || n, 'email.sent', '{}', 'succeeded', 1, $3, $3, $3, $3
       FROM unnest($4::text[]) WITH ORDINALITY AS t(id, n)`,
      [wh.id, org.orgId, endedAt, ids],
    );
    await db.query(
      `INSERT INTO webhook_attempts (delivery_id, attempt, attempted_at, response_status, latency_ms)
       SELECT id, 1, $1, 200, 5 FROM unnest($2::text[]) AS t(id)`,
      [endedAt, ids],
    );
    // The endpoint's test event ended just now: it stays.
    expect(await retention.runOnce()).toBe(2500);
    const left = await log(org, wh.id);
    expect(left.map((d) => d.event_type)).toEqual(['webhook.test']);
    const { rows } = await db.query(
      'SELECT count(*)::int AS n FROM webhook_attempts WHERE delivery_id = ANY($1)',
      [ids],
    );
    expect(rows[0].n).toBe(0);
  });
});
