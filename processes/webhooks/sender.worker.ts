import { parentPort, workerData } from 'node:worker_threads';
import { type SendOutcome, WebhookSender } from './http-sender.ts';
import type { Request, Result } from './sender-thread.ts';
import { signatureHeader } from './signer.ts';

/** The sender thread (see sender-thread.ts): signs and POSTs what it is sent, and answers with the outcomes. */
const port = parentPort!;
const sender = new WebhookSender(workerData);
let results: Result[] = [];

// Outcomes that arrive together (one read of several sockets) go back in one message.
const answer = () => {
  port.postMessage(results);
  results = [];
};

port.postMessage('ready');
port.on('message', (message: Request[] | 'close') => {
  if (message === 'close') {
    void sender.close().then(() => port.close());
    return;
  }
  for (const [n, url, id, timestamp, secrets, body] of message) {
    const started = performance.now();
    const done = (o: SendOutcome) => {
      if (results.length === 0) setImmediate(answer);
      results.push([
        n,
        o.status,
        o.retryAfter ?? null,
        o.excerpt,
        o.error,
        Math.round(performance.now() - started),
      ]);
    };
    let headers: Record<string, string>;
    try {
      headers = {
        'content-type': 'application/json',
        'user-agent': 'Postline-Webhooks/1',
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(secrets, id, timestamp, body),
      };
    } catch (error) {
      // This delivery fails (a secret that cannot be used); the others in the thread go on.
      done({ status: null, excerpt: null, error: `not signed: ${(error as Error).message}` });
      continue;
    }
    void sender.post(url, headers, body).then(done);
  }
});
