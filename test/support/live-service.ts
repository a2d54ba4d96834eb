import { afterAll, beforeAll } from 'vitest';
import { startDnsServer, type TestDnsServer } from './dns-server.ts';
import { sendingToLoopbackEnv } from './domains.ts';
import { type TestServiceOptions, useTestService } from './service.ts';
import { type SmtpSink, type SmtpSinkOptions, startSmtpSink } from './smtp-sink.ts';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.ts';

/**
 * A test service as `npm start` runs it (every process manager on), sending live email: a DNS server on loopback
 * that domains verify against, the SMTP server that recipients at `rcpt.test` are delivered to, and a webhook
 * receiver. `env` goes on top of what that needs. Started before the file's tests, closed after them.
 */
export function useLiveService(o: { sink?: SmtpSinkOptions; env?: TestServiceOptions['env'] } = {}) {
  const live = {} as { dns: TestDnsServer; sink: SmtpSink; receiver: WebhookReceiver };
  beforeAll(async () => {
    live.dns = await startDnsServer();
    live.sink = await startSmtpSink(o.sink);
    live.receiver = await startWebhookReceiver();
  });
  const svc = useTestService(() => ({
    processes: true,
    env: { ...sendingToLoopbackEnv(live.dns, live.sink), ...o.env },
  }));
  // Registered before the service's own afterAll, so it runs after it (hooks unwind as a stack).
  afterAll(async () => {
    await live.sink?.close();
    await live.receiver?.close();
    await live.dns?.close();
  });
  return Object.assign(live, { svc });
}
