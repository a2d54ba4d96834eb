import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../platform/ids.ts';
import { WebhookDispatcher } from '../../processes/webhooks/dispatcher.process.ts';
import { WebhookFanOut } from '../../processes/webhooks/fan-out.process.ts';
import { startTestService, type TestService } from '../support/service.ts';
import {
  appendSourceEvent,
  emailQueuedData,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../support/webhook-receiver.ts';

// The fan-out and dispatcher as the service runs them: following the log live, with the fan-out reading the
// next batch while it writes the current one (small batches here, so a backlog spans many of them).
let svc: TestService;
let fanOut: WebhookFanOut;
let dispatcher: WebhookDispatcher;
let receiver: WebhookReceiver;

beforeAll(async () => {
  svc = await startTestService();
  receiver = await startWebhookReceiver();
  fanOut = new WebhookFanOut(svc.postline.services, { batchSize: 4 });
  dispatcher = new WebhookDispatcher(svc.postline.services);
});
afterAll(async () => {
  await fanOut?.stop();
  await dispatcher?.stop();
  await receiver?.close();
  await svc?.close();
});

describe('webhooks, live', () => {
  it('delivers every event of a backlog and of live traffic exactly once, signed', async () => {
    const org = await svc.createOrg('pro');
    const created = await org.live.post('/v1/webhooks', { url: receiver.url, events: ['email.sent'] });
    receiver.secrets.push(created.body.signing_secret);
    const send = async () => {
      const emailId = newId('em');
      const meta = { orgId: org.orgId, mode: 'live' as const };
      await appendSourceEvent(
        svc.postline.services.store,
        `email-${emailId}`,
        'EmailQueued',
        emailQueuedData(emailId, org.orgId, 'live'),
        meta,
      );
      await appendSourceEvent(
        svc.postline.services.store,
        `email-${emailId}`,
        'EmailSent',
        { emailId, messageId: `<${emailId}@x>`, sentAt: new Date().toISOString() },
        meta,
      );
      return emailId;
    };
    const backlog = [];
    for (let i = 0; i < 10; i++) backlog.push(await send());
    fanOut.start();
    dispatcher.start();
    const live = [];
    for (let i = 0; i < 5; i++) live.push(await send());
    // The test event of the webhook's creation, then one email.sent per email.
    const received = await receiver.waitFor(16);
    const sent = received.filter((r) => r.payload.type === 'email.sent').map((r) => r.payload.data.email_id);
    expect([...sent].sort()).toEqual([...backlog, ...live].sort());
    expect(new Set(received.map((r) => r.id)).size).toBe(received.length);
    expect(received.every((r) => r.verifiedWith.length === 1)).toBe(true);

    // The fan-out hands its deliveries to the dispatcher of its process unwritten: each row is written once, with
    // its outcome (a first attempt that succeeds in the delivery row itself), and fanning the log out again sends
    // and records nothing twice.
    const { db } = svc.postline.services;
    const outcomes = async () =>
      (
        await db.query<{ status: string; attempts: number; claimed: boolean; n: number }>(
          `SELECT d.status, d.attempts, d.claim_token IS NOT NULL AS claimed,
             count(a.*)::int + (d.first_latency_ms IS NOT NULL)::int AS n
           FROM webhook_deliveries d LEFT JOIN webhook_attempts a ON a.delivery_id = d.id
           WHERE d.webhook_id = $1 GROUP BY d.webhook_id, d.id ORDER BY d.id`,
          [created.body.id],
        )
      ).rows;
    await expect.poll(async () => (await outcomes()).filter((d) => d.status === 'succeeded').length).toBe(16);
    const recorded = await outcomes();
    expect(recorded).toHaveLength(16);
    expect(recorded.every((d) => d.attempts === 1 && !d.claimed && d.n === 1)).toBe(true);
    const log = (await org.live.get(`/v1/webhooks/${created.body.id}/deliveries?limit=100`)).body
      .data as any[];
    expect(log).toHaveLength(16);
    expect(log.every((d) => d.attempts.length === 1 && d.attempts[0].response_status === 200)).toBe(true);
    await db.query(`UPDATE webhook_fanout_checkpoints SET position = ''`);
    await send(); // wakes the fan-out, which reads the whole log again
    await receiver.waitFor(17);
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received).toHaveLength(17);
    expect(await outcomes()).toHaveLength(17);
  });

  it('moves the checkpoint past a delivery only once its outcome is recorded, and after a restart sends again only deliveries without one', async () => {
    const { db, store } = svc.postline.services;
    const org = await svc.createOrg('pro');
    const slow = await startWebhookReceiver();
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    try {
      const created = await org.live.post('/v1/webhooks', { url: slow.url, events: ['email.sent'] });
      slow.secrets.push(created.body.signing_secret);
      await slow.waitFor(1); // the test event
      slow.respond = async () => {
        await held;
        return { status: 200 };
      };
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
      const [pendingDelivery] = await slow.waitFor(2).then((r) => r.slice(1));
      const checkpoint = async () =>
        (
          await db.query<{ position: string; sent_up_to: string; owner: string | null }>(
            'SELECT position, sent_up_to, owner FROM webhook_fanout_checkpoints',
          )
        ).rows[0];
      // Sent, not recorded: no row yet, and the checkpoint waits before its event, owned by this fan-out.
      const waiting = await checkpoint();
      expect(waiting.position < position).toBe(true);
      expect(waiting.sent_up_to >= position).toBe(true);
      expect(waiting.owner).not.toBeNull();
      const row = async () =>
        (await db.query('SELECT status FROM webhook_deliveries WHERE id = $1', [pendingDelivery.id])).rows;
      expect(await row()).toEqual([]);
      release();
      await expect.poll(async () => (await checkpoint()).position >= position).toBe(true);
      expect(await row()).toEqual([{ status: 'succeeded' }]);
      await expect.poll(async () => (await checkpoint()).owner).toBeNull();

      // As after a crash while it was in flight: its row never written, the checkpoint back before its event. The
      // fan-out reads the log again from there: only that delivery is sent again, under the same webhook-id.
      await db.query('DELETE FROM webhook_deliveries WHERE id = $1', [pendingDelivery.id]);
      await db.query(`UPDATE webhook_fanout_checkpoints SET position = ''`);
      const before = receiver.received.length;
      await appendSourceEvent(
        store,
        `email-${emailId}`,
        'EmailDelivered',
        { emailId, recipient: 'a@b.c' },
        meta,
      );
      const [again] = await slow.waitFor(3).then((r) => r.slice(2));
      expect(again.id).toBe(pendingDelivery.id);
      expect(again.verifiedWith).toEqual([created.body.signing_secret]);
      await expect.poll(row).toEqual([{ status: 'succeeded' }]);
      await new Promise((r) => setTimeout(r, 300));
      expect(slow.received).toHaveLength(3);
      expect(receiver.received).toHaveLength(before);
    } finally {
      release();
      await slow.close();
    }
  });
});
