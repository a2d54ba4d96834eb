import { afterAll, beforeAll, expect } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { WebhookDispatcher } from '../../processes/webhooks/dispatcher.process.ts';
import { WebhookFanOut } from '../../processes/webhooks/fan-out.process.ts';
import { useTestService } from './service.ts';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.ts';

/**
 * A test service on a ManualClock with a webhook fan-out and dispatcher that the test drives (`pump`), and real
 * receivers on that clock (`receiver()`), closed after the file.
 */
export function useWebhookProcesses() {
  const clock = new ManualClock(new Date());
  const receivers: WebhookReceiver[] = [];
  const svc = useTestService(() => ({ clock }));
  const processes = {} as { fanOut: WebhookFanOut; dispatcher: WebhookDispatcher };
  beforeAll(async () => {
    processes.fanOut = new WebhookFanOut(svc.postline.services);
    processes.dispatcher = new WebhookDispatcher(svc.postline.services);
  });
  afterAll(async () => {
    await processes.dispatcher?.stop();
    await Promise.all(receivers.map((r) => r.close()));
  });
  /** A receiver on the test's clock (its signature check agrees with the sender's time). */
  const receiver = async () => {
    const r = await startWebhookReceiver({ clock });
    receivers.push(r);
    return r;
  };
  /** Fan out what the log holds, then send what is due, and wait for the outcomes. */
  const pump = async () => {
    await processes.fanOut.runOnce();
    return processes.dispatcher.runOnce();
  };
  return {
    clock,
    svc,
    processes,
    receiver,
    pump,
    /** A new Pro organization whose webhook to a new receiver (`events`) has had its test event delivered. */
    subscribed: async (events = ['email.sent']) => {
      const org = await svc.createOrg('pro');
      const r = await receiver();
      const wh = await r.subscribe(org.live, events);
      await pump();
      expect(r.received.map((d) => d.payload.type)).toEqual(['webhook.test']);
      return { org, r, wh };
    },
  };
}
