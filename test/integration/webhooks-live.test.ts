import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../platform/ids.ts';
import { DELIVERIES_CHANNEL } from '../../processes/webhooks/deliveries.ts';
import { WebhookDispatcher } from '../../processes/webhooks/dispatcher.process.ts';
import { FAN_OUT_NAME, WebhookFanOut } from '../../processes/webhooks/fan-out.process.ts';
import { type ApiResponse, type TestOrg, useTestService } from '../support/service.ts';
import {
  appendSentEmail,
  appendSourceEvent,
  emailQueuedData,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../support/webhook-receiver.ts';

// The fan-out and dispatcher as the service runs them: following the log live.
let fanOut: WebhookFanOut;
let dispatcher: WebhookDispatcher;
let receiver: WebhookReceiver;

const svc = useTestService();
beforeAll(async () => {
  receiver = await startWebhookReceiver();
  fanOut = new WebhookFanOut(svc.postline.services);
  dispatcher = new WebhookDispatcher(svc.postline.services);
});
afterAll(async () => {
  await fanOut?.stop();
  await dispatcher?.stop();
  await receiver?.close();
});

describe('webhooks, live', () => {
  it('delivers every event of a backlog and of live traffic exactly once, signed', async () => {
    const org = await svc.createOrg('pro');
    const created = await receiver.subscribe(org.live, ['email.sent']);
    const send = () => appendSentEmail(svc.postline.services.store, org.orgId, new Date());
    const backlog = [];
    for (let i = 0; i < 10; i++) backlog.push(await send());
    fanOut.start();
    dispatcher.start();
    const live = [];
    for (let i = 0; i < 5; i++) live.push(await send());
    // The test event of the webhook's creation, then one email.sent per email.
    const received = await receiver.waitFor(16);
    const sent = receiver.ofType('email.sent').map((r) => r.payload.data.email_id);
    expect([...sent].sort()).toEqual([...backlog, ...live].sort());
    expect(new Set(received.map((r) => r.id)).size).toBe(received.length);
    expect(received.every((r) => r.verifiedWith.length === 1)).toBe(true);

    // Each delivery is one row with one attempt (it succeeded), and fanning the log out again sends and records
    // nothing twice.
    const { db } = svc.postline.services;
    const outcomes = async () =>
      (
        await db.query<{ status: string; attempts: number; claimed: boolean; n: number }>(
          `SELECT d.status, d.attempts, d.claim_token IS NOT NULL AS claimed,
             count(a.*)::int AS n
           FROM webhook_deliveries d LEFT JOIN webhook_attempts a ON a.delivery_id = d.id
           WHERE d.webhook_id = $1 GROUP BY d.webhook_id, d.id ORDER BY d.id`,
          [created.id],
        )
      ).rows;
    await expect.poll(async () => (await outcomes()).filter((d) => d.status === 'succeeded').length).toBe(16);
    const recorded = await outcomes();
    expect(recorded).toHaveLength(16);
    expect(recorded.every((d) => d.attempts === 1 && !d.claimed && d.n === 1)).toBe(true);
    const log = (await org.live.get(`/v1/webhooks/${created.id}/deliveries?limit=100`)).body.data as any[];
    expect(log).toHaveLength(16);
    expect(log.every((d) => d.attempts.length === 1 && d.attempts[0].response_status === 200)).toBe(true);
    await db.query(`UPDATE process_checkpoints SET position = '' WHERE name = $1`, [FAN_OUT_NAME]);
    await send(); // wakes the fan-out, which reads the whole log again
    await receiver.waitFor(17);
    // Once the fan-out has read the whole log again and every delivery row has succeeded, nothing is left to send.
    const head = await svc.postline.services.store.headPosition({ committed: true });
    const fanOutAt = async () =>
      (await db.query('SELECT position FROM process_checkpoints WHERE name = $1', [FAN_OUT_NAME])).rows[0]
        ?.position;
    await expect.poll(async () => (await fanOutAt()) >= head).toBe(true);
    await expect.poll(async () => (await outcomes()).every((d) => d.status === 'succeeded')).toBe(true);
    expect(await outcomes()).toHaveLength(17);
    expect(receiver.received).toHaveLength(17);
  });

  it('records a delivery with the checkpoint that passes its event, before sending it, and sends it again under the same webhook-id once the claim of a crashed attempt has run out', async () => {
    const { db, store } = svc.postline.services;
    const org = await svc.createOrg('pro');
    const slow = await startWebhookReceiver();
    let release = () => {};
    let crashed: Promise<void> | undefined;
    let other: WebhookDispatcher | undefined;
    try {
      const created = await slow.subscribe(org.live, ['email.sent']);
      await slow.waitFor(1); // the test event
      release = slow.hold(200);
      const emailId = newId('em');
      const meta = { orgId: org.orgId, mode: 'live' as const };
      await appendSourceEvent(
        store,
        `email-${emailId}`,
        'EmailQueued',
        emailQueuedData(emailId, org.orgId, 'live'),
        meta,
      );
      const { position } = await appendSourceEvent(
        store,
        `email-${emailId}`,
        'EmailSent',
        { emailId, messageId: `<${emailId}@x>`, sentAt: new Date().toISOString() },
        meta,
      );
      const [inFlight] = await slow.waitFor(2).then((r) => r.slice(1));
      // In flight: its row was written with the fan-out's checkpoint past its event, and it is claimed.
      const { rows: checkpoint } = await db.query<{ position: string }>(
        'SELECT position FROM process_checkpoints WHERE name = $1',
        [FAN_OUT_NAME],
      );
      expect(checkpoint[0].position >= position).toBe(true);
      const row = async () =>
        (
          await db.query<{ status: string; claimed: boolean }>(
            'SELECT status, claim_token IS NOT NULL AS claimed FROM webhook_deliveries WHERE id = $1',
            [inFlight.id],
          )
        ).rows;
      expect(await row()).toEqual([{ status: 'pending', claimed: true }]);

      // As after a crash while it was in flight: its process claims nothing more (left running, its next poll could
      // take the row again and hold it until its own request timed out), no outcome, and its claim's lease runs
      // out. Another dispatcher claims it again and sends it under the same webhook-id and body.
      crashed = dispatcher.stop(); // done once the request it has in flight is answered (released below)
      await db.query(
        `UPDATE webhook_deliveries SET claimed_until = now() - interval '1 second' WHERE id = $1`,
        [inFlight.id],
      );
      other = new WebhookDispatcher(svc.postline.services);
      other.start();
      const before = receiver.received.length;
      await db.query('SELECT pg_notify($1, $2)', [DELIVERIES_CHANNEL, '']);
      const [again] = await slow.waitFor(3).then((r) => r.slice(2));
      expect(again.id).toBe(inFlight.id);
      expect(again.body).toBe(inFlight.body);
      expect(again.verifiedWith).toEqual([created.signing_secret]);
      release();
      await expect.poll(row).toEqual([{ status: 'succeeded', claimed: false }]);
      expect(slow.received).toHaveLength(3);
      expect(receiver.received).toHaveLength(before);
    } finally {
      release();
      await crashed;
      await other?.stop();
      await slow.close();
    }
  });

  it('passes over the events of an organization without an endpoint, and once one is created fans out what follows, the email read from its stream', async () => {
    const { db, store } = svc.postline.services;
    const org = await svc.createOrg('pro');
    const later = await startWebhookReceiver();
    try {
      fanOut.start();
      dispatcher.start();
      const emailId = newId('em');
      const meta = { orgId: org.orgId, mode: 'live' as const };
      const queued = { subject: 'Before the endpoint' };
      const { position } = await appendSourceEvent(
        store,
        `email-${emailId}`,
        'EmailQueued',
        emailQueuedData(emailId, org.orgId, 'live', queued),
        meta,
      );
      const fanOutAt = async () =>
        (await db.query('SELECT position FROM process_checkpoints WHERE name = $1', [FAN_OUT_NAME])).rows[0]
          ?.position;
      await expect.poll(async () => (await fanOutAt()) >= position).toBe(true);
      const summaries = await db.query('SELECT 1 FROM webhook_email_summaries WHERE email_id = $1', [
        emailId,
      ]);
      expect(summaries.rows).toEqual([]);

      await later.subscribe(org.live, ['email.sent']);
      await later.waitFor(1); // the test event
      const sentAt = new Date().toISOString();
      await appendSourceEvent(
        store,
        `email-${emailId}`,
        'EmailSent',
        { emailId, messageId: `<${emailId}@x>`, sentAt },
        meta,
      );
      const [sent] = await later.waitFor(2).then((r) => r.slice(1));
      expect(sent.payload.type).toBe('email.sent');
      expect(sent.payload.data).toMatchObject({
        email_id: emailId,
        subject: 'Before the endpoint',
        timestamp: sentAt,
      });
    } finally {
      await later.close();
    }
  });
});

describe('webhooks, live: an endpoint switched off while deliveries claimed for it wait', () => {
  /** The dispatcher's cap of requests in flight to one endpoint (its default). */
  const PER_ENDPOINT = 16;

  /**
   * A receiver holds its answers: PER_ENDPOINT of 40 deliveries are in flight, the others claimed ahead and waiting
   * in the dispatcher's lane. `switchOff` deletes or disables the endpoint through the API; the fan-out applies it
   * and tells the dispatcher (NOTIFY), which cancels those waiting. Then the receiver answers: nothing beyond the
   * requests in flight at the change reaches it.
   */
  async function switchedOffWhileClaimed(
    switchOff: (org: TestOrg, webhookId: string) => Promise<ApiResponse>,
  ) {
    const { db, store } = svc.postline.services;
    const org = await svc.createOrg('pro');
    const held = await startWebhookReceiver();
    let release = () => {};
    try {
      fanOut.start();
      dispatcher.start();
      const wh = await held.subscribe(org.live, ['email.sent']);
      await held.waitFor(1); // the test event
      release = held.hold(200);
      for (let i = 0; i < 40; i++) await appendSentEmail(store, org.orgId, new Date());
      const count = async (where: string) =>
        (
          await db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM webhook_deliveries
             WHERE webhook_id = $1 AND event_type = 'email.sent' AND ${where}`,
            [wh.id],
          )
        ).rows[0].n;
      await held.waitFor(1 + PER_ENDPOINT);
      await expect.poll(() => count(`status = 'pending' AND claimed_until > now()`)).toBe(40);

      expect((await switchOff(org, wh.id)).status).toBeLessThan(300);
      await expect.poll(() => count(`status = 'canceled'`)).toBe(40 - PER_ENDPOINT);
      expect(held.ofType('email.sent')).toHaveLength(PER_ENDPOINT);
      release();
      await expect.poll(() => count(`status = 'succeeded'`)).toBe(PER_ENDPOINT);
      expect(await count(`status NOT IN ('succeeded', 'canceled')`)).toBe(0);
      expect(held.ofType('email.sent')).toHaveLength(PER_ENDPOINT);
    } finally {
      release();
      await held.close();
    }
  }

  it('sends none of them once the endpoint is deleted, and cancels them', async () => {
    await switchedOffWhileClaimed((org, id) => org.live.delete(`/v1/webhooks/${id}`));
  });

  it('sends none of them once the endpoint is disabled, and cancels them', async () => {
    await switchedOffWhileClaimed((org, id) => org.live.patch(`/v1/webhooks/${id}`, { active: false }));
  });
});
