import { afterAll, beforeAll } from 'vitest';
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
  return {
    clock,
    svc,
    processes,
    /** A receiver on the test's clock (its signature check agrees with the sender's time). */
    receiver: async () => {
      const r = await startWebhookReceiver({ clock });
      receivers.push(r);
      return r;
    },
    /** Fan out what the log holds, then send what is due, and wait for the outcomes. */
    pump: async () => {
      await processes.fanOut.runOnce();
      return processes.dispatcher.runOnce();
    },
  };
}
