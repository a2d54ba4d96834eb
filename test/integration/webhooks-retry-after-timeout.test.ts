import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEBHOOK_RETRIES } from '../../processes/retry-schedule.ts';
import { WebhookDispatcher } from '../../processes/webhooks/dispatcher.process.ts';
import { WebhookFanOut } from '../../processes/webhooks/fan-out.process.ts';
import { useTestService } from '../support/service.ts';

/**
 * The retry schedule counts from the end of a failed attempt: an endpoint that timed out is not hit again the
 * moment its time-out ends. Real time here (the behaviour is about time), a real receiver on loopback that holds
 * the first request until the dispatcher gives up on it, and times measured at the receiver.
 */

const TIMEOUT_MS = 3000;
/** The first retry waits 5 s with jitter ±20 %: `random` 0.5 puts it at 5 s exactly. */
const FIRST_DELAY_MS = WEBHOOK_RETRIES.delaysMs[0];

const svc = useTestService();
let server: Server;
let url: string;
/** When each request arrived, and when the client closed the connection of the one held. */
const arrivals: number[] = [];
let firstClosedAt: number | null = null;
let fanOut: WebhookFanOut;
let dispatcher: WebhookDispatcher;

beforeAll(async () => {
  server = createServer((req, res) => {
    arrivals.push(performance.now());
    req.resume();
    if (arrivals.length === 1) {
      // Held: never answered; the dispatcher's time-out closes the connection.
      req.socket.once('close', () => {
        firstClosedAt = performance.now();
      });
      return;
    }
    res.writeHead(200).end('ok');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  fanOut = new WebhookFanOut(svc.postline.services);
  dispatcher = new WebhookDispatcher(svc.postline.services, {
    timeoutMs: TIMEOUT_MS,
    pollMs: 50,
    random: () => 0.5,
    allowPrivateNetworks: true,
  });
});
afterAll(async () => {
  await dispatcher?.stop();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
});

describe('a webhook endpoint that times out', () => {
  it(`is retried no sooner than ${FIRST_DELAY_MS * 0.8} ms after the attempt ended, not when the time-out ends`, async () => {
    const org = await svc.createOrg('pro');
    const created = await org.live.post('/v1/webhooks', { url, events: ['email.sent'] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // The webhook's test event is its first delivery.
    await fanOut.runOnce();
    dispatcher.start();
    await expect.poll(() => arrivals.length, { timeout: 60_000, interval: 50 }).toBe(2);
    expect(firstClosedAt, 'the dispatcher closed the held connection').not.toBeNull();
    // The time-out held, roughly: the connection was closed by the client, not at once.
    expect(firstClosedAt! - arrivals[0]).toBeGreaterThanOrEqual(TIMEOUT_MS * 0.9);
    const waited = arrivals[1] - firstClosedAt!;
    expect(waited, 'ms from the end of the first attempt to the retry').toBeGreaterThanOrEqual(
      FIRST_DELAY_MS * 0.8,
    );
  }, 90_000);
});
