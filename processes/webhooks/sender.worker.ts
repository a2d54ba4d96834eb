import { parentPort, workerData } from 'node:worker_threads';
import { DispatchQueue } from './dispatch-queue.ts';
import { type SendOutcome, WebhookSender } from './http-sender.ts';
import { NOT_SENT, type Request, type Result, type SenderOptions } from './sender-thread.ts';
import { signatureHeader } from './signer.ts';

/**
 * The sender thread (see sender-thread.ts): holds the deliveries it is given in per-endpoint lanes, signs and
 * POSTs them as request slots free up, and answers with the outcomes.
 */
const options = workerData as SenderOptions;
const port = parentPort!;
const sender = new WebhookSender({ ...options, connectionsPerOrigin: options.perEndpoint });

interface Held {
  request: Request;
  /** performance.now() on arrival. */
  arrived: number;
  /** Started in the turn it arrived in: its time is the one it was handed over with. */
  fresh: boolean;
}

const queue = new DispatchQueue<Held>(options.perEndpoint, (h) => h.request[1]);
let results: Result[] = [];
let closing = false;
let closed = false;

// Outcomes that arrive together (one read of several sockets) go back in one message.
const answer = () => {
  if (results.length > 0) port.postMessage(results);
  results = [];
  if (closing && !closed && queue.inFlight === 0) {
    closed = true; // the last outcomes are out: the thread ends
    void sender.close().then(() => port.close());
  }
};

const settle = (result: Result) => {
  if (results.length === 0) setImmediate(answer);
  results.push(result);
};

/** Starts waiting deliveries while request slots are free. */
function fill(): void {
  while (!closing && queue.inFlight < options.concurrency) {
    const held = queue.take();
    if (!held) return;
    const [n, webhookId, url, id, secrets, body, now, leaseLeftMs] = held.request;
    const waited = performance.now() - held.arrived;
    // Its lease would end before a request could: left to a later claim rather than risk a double send.
    if (waited > leaseLeftMs) {
      queue.done(webhookId);
      settle([n, null, null, null, null, 0, NOT_SENT]);
      continue;
    }
    // The service clock as of the hand-over, moved on by the time spent waiting for a slot here.
    const at = held.fresh ? now : now + Math.round(waited);
    const timestamp = Math.floor(at / 1000);
    const started = performance.now();
    const finish = (o: SendOutcome) => {
      queue.done(webhookId);
      settle([
        n,
        o.status,
        o.retryAfter ?? null,
        o.excerpt,
        o.error,
        Math.round(performance.now() - started),
        at,
      ]);
    };
    // Encoded once: signed and sent as these bytes (undici would encode a string body itself).
    const bytes = Buffer.from(body);
    let headers: Record<string, string>;
    try {
      headers = {
        'content-type': 'application/json',
        'user-agent': 'Postline-Webhooks/1',
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(secrets, id, timestamp, bytes),
      };
    } catch (error) {
      // This delivery fails (a secret that cannot be used); the others in the thread go on.
      finish({ status: null, excerpt: null, error: `not signed: ${(error as Error).message}` });
      continue;
    }
    void sender.post(url, headers, bytes).then((outcome) => {
      finish(outcome);
      fill();
    });
  }
}

port.postMessage('ready');
port.on('message', (message: Request[] | 'close') => {
  if (message === 'close') {
    closing = true;
    port.postMessage({ unsent: queue.drain().map((h) => h.request[0]) });
    answer();
    return;
  }
  const arrived = performance.now();
  const batch: Held[] = message.map((request) => ({ request, arrived, fresh: true }));
  for (const held of batch) queue.push(held);
  fill();
  for (const held of batch) held.fresh = false;
});
