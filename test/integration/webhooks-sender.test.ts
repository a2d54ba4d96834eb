import { afterEach, describe, expect, it } from 'vitest';
import { WebhookSender } from '../../processes/webhooks/http-sender.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

// The dispatcher's HTTP client on its own, against real receivers: the one timer that times out every request.
const receivers: WebhookReceiver[] = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
});

describe('webhook sender', () => {
  it('times out a request that is never answered while many others finish after it', async () => {
    const silent = await startWebhookReceiver();
    silent.respond = () => new Promise(() => {});
    const fast = await startWebhookReceiver();
    fast.respond = () => ({ status: 204 });
    receivers.push(silent, fast);
    const sender = new WebhookSender({
      allowPrivateNetworks: true,
      timeoutMs: 3000,
      connectionsPerOrigin: 16,
    });
    try {
      const unanswered = sender.post(silent.url, {}, '{}');
      // More than the time-out queue keeps before it drops settled requests from behind an unsettled one.
      const statuses: (number | null)[] = [];
      for (let i = 0; i < 1200; i += 16) {
        const outcomes = await Promise.all(
          Array.from({ length: 16 }, () => sender.post(fast.url, {}, Buffer.from('{"n":1}'))),
        );
        statuses.push(...outcomes.map((o) => o.status));
      }
      expect(statuses.every((s) => s === 204)).toBe(true);
      expect(fast.received).toHaveLength(1200);
      expect(fast.received[0].body).toBe('{"n":1}');
      expect(await unanswered).toEqual({ status: null, excerpt: null, error: 'no response within 3 s' });
    } finally {
      await sender.close();
    }
  });
});
