import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { expect } from 'vitest';
import type { Clock } from '../../platform/clock.ts';
import { newId } from '../../platform/ids.ts';
import { openApiResponses } from './openapi-responses.ts';
import type { ApiClient } from './service.ts';

export interface ReceivedWebhook {
  id: string;
  timestamp: number;
  signatures: string[];
  body: string;
  payload: any;
  /** The configured secrets whose signature the standardwebhooks verifier accepted (empty: none verified). */
  verifiedWith: string[];
  url: string;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface WebhookReceiver {
  url: string;
  port: number;
  received: ReceivedWebhook[];
  /** Secrets to verify with; every delivery is checked against each of them by the real verifier. */
  secrets: string[];
  /** How to answer the next requests (default 200). May return a promise to hold the response. */
  respond: (req: ReceivedWebhook) => Reply | Promise<Reply>;
  /** The deliveries of events of `type` received so far, in order of arrival. */
  ofType(type: string): ReceivedWebhook[];
  /** Holds every request from now on, until the function it returns is called; then answers `status`. */
  hold(status: number): () => void;
  /** Resolves once `count` deliveries have arrived in total. */
  waitFor(count: number): Promise<ReceivedWebhook[]>;
  /** Creates a webhook to this receiver through `client` (201), and verifies deliveries with its secret. */
  subscribe(client: ApiClient, events: string[]): Promise<{ id: string; signing_secret: string }>;
  close(): Promise<void>;
}

const readBody = async (req: IncomingMessage) => {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

/**
 * A real HTTP webhook receiver on 127.0.0.1 that verifies every delivery with the `standardwebhooks` package.
 * The verifier checks the timestamp against the receiver's clock; tests that walk days with a ManualClock give
 * it the same clock, as a receiver whose clock agrees with the sender's.
 */
export async function startWebhookReceiver(
  options: { clock?: Clock; host?: string } = {},
): Promise<WebhookReceiver> {
  const waiters: { count: number; resolve: () => void }[] = [];
  const undocumented: string[] = [];
  const receiver: WebhookReceiver = {
    url: '',
    port: 0,
    received: [],
    secrets: [],
    respond: () => ({ status: 200, body: 'ok' }),
    ofType: (type) => receiver.received.filter((r) => r.payload?.type === type),
    hold(status) {
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      receiver.respond = async () => {
        await held;
        return { status };
      };
      return release;
    },
    async waitFor(count) {
      if (receiver.received.length < count)
        await new Promise<void>((resolve) => waiters.push({ count, resolve }));
      return receiver.received;
    },
    async subscribe(client, events) {
      const created = await client.post('/v1/webhooks', { url: receiver.url, events });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      receiver.secrets.push(created.body.signing_secret);
      return created.body;
    },
    close: async () => {},
  };
  const verify = (body: string, headers: Record<string, string>): string[] =>
    receiver.secrets.filter((secret) => {
      const realNow = Date.now;
      if (options.clock) Date.now = () => options.clock!.now().getTime();
      try {
        new Webhook(secret).verify(body, headers);
        return true;
      } catch {
        return false;
      } finally {
        Date.now = realNow;
      }
    });
  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    const headers = Object.fromEntries(
      ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((h) => [h, String(req.headers[h] ?? '')]),
    );
    let payload: any;
    try {
      payload = JSON.parse(body);
    } catch {}
    const received: ReceivedWebhook = {
      id: headers['webhook-id'],
      timestamp: Number(headers['webhook-timestamp']),
      signatures: headers['webhook-signature'].split(' ').filter(Boolean),
      body,
      payload,
      verifiedWith: verify(body, headers),
      url: req.url ?? '/',
    };
    receiver.received.push(received);
    // Every delivery of Postline's (an envelope `{type, id, …}`; tests of the bare sender post other bodies) is
    // held to the OpenAPI document's `webhooks`: a payload it does not describe fails the file.
    const envelope = typeof payload?.type === 'string' && typeof payload?.id === 'string';
    const mismatch = envelope ? openApiResponses().checkWebhook(payload) : null;
    if (mismatch) undocumented.push(mismatch);
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (receiver.received.length >= waiters[i].count) waiters.splice(i, 1)[0].resolve();
    }
    const reply = await receiver.respond(received);
    res.writeHead(reply.status, reply.headers ?? {});
    res.end(reply.body ?? '');
  });
  server.listen(0, options.host ?? '127.0.0.1');
  await once(server, 'listening');
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}/hooks`;
  receiver.close = async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    if (undocumented.length > 0) throw new Error(`Deliveries not as documented:\n${undocumented.join('\n')}`);
  };
  return receiver;
}

/** Appends a source event straight to the store, as the emails or domains code would (org and mode in metadata). */
export async function appendSourceEvent(
  store: import('../../platform/eventstore/types.ts').EventStore,
  stream: string,
  type: string,
  data: Record<string, unknown>,
  meta: { orgId: string; mode: 'live' | 'test' },
) {
  return store.append(stream, [{ type, data, metadata: { ...meta, actor: 'system' } }], {
    expectedRevision: 'any',
  });
}

/** A live email queued and sent at `sentAt`, as the log holds it: an `email.sent` for the fan-out. Its id. */
export async function appendSentEmail(
  store: import('../../platform/eventstore/types.ts').EventStore,
  orgId: string,
  sentAt: Date,
): Promise<string> {
  const emailId = newId('em');
  const meta = { orgId, mode: 'live' as const };
  await appendSourceEvent(
    store,
    `email-${emailId}`,
    'EmailQueued',
    emailQueuedData(emailId, orgId, 'live'),
    meta,
  );
  const sent = { emailId, messageId: `<${emailId}@x>`, sentAt: sentAt.toISOString() };
  await appendSourceEvent(store, `email-${emailId}`, 'EmailSent', sent, meta);
  return emailId;
}

/** An EmailQueued as the emails aggregate records it: what email events' public data is built from. */
export function emailQueuedData(
  emailId: string,
  orgId: string,
  mode: 'live' | 'test',
  overrides: Record<string, unknown> = {},
) {
  return {
    emailId,
    orgId,
    mode,
    from: 'Acme <hello@acme.test>',
    to: ['ada@example.test'],
    cc: [],
    bcc: [],
    replyTo: [],
    subject: 'Welcome aboard',
    html: '<p>Hi</p>',
    text: 'Hi',
    headers: {},
    tags: ['welcome'],
    attachments: [],
    domainId: null,
    domainName: 'acme.test',
    suppressedRecipients: [],
    createdAt: new Date().toISOString(),
    ...overrides,
  };
}

/**
 * Appends a marker event and returns its position: once a reader has passed it, it has seen everything committed
 * before the call (the log releases events in transaction order, so a fresh append can lag by a moment).
 */
export async function logMarker(store: import('../../platform/eventstore/types.ts').EventStore) {
  const { position } = await store.append(
    'test-marker',
    [{ type: 'TestMarker', data: {}, metadata: { orgId: 'test', mode: 'test', actor: 'system' } }],
    {
      expectedRevision: 'any',
    },
  );
  return position;
}
