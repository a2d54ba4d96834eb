import { connect } from 'node:net';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { PATIENCE_MS } from '../support/patience.ts';
import { rawSmtp } from '../support/raw-smtp.ts';
import { startTestService } from '../support/service.ts';

/**
 * Shutting down (SIGTERM runs the same close()): a request in flight is answered and its connection closed; a
 * request that arrives meanwhile gets 503 `shutting_down` in the error shape, so its client sends it elsewhere.
 */
describe('while the service shuts down', () => {
  it('answers the request in flight, turns new ones away with 503 shutting_down, then stops listening', async () => {
    // The grace bounds the request in flight, which may take long on a busy machine; it ends once answered.
    const svc = await startTestService({ env: { SHUTDOWN_GRACE_MS: String(PATIENCE_MS) } });
    const org = await svc.createOrg('pro');
    const port = svc.postline.port!;
    const body = JSON.stringify({
      from: 'a@example.com',
      to: 'delivered@simulator.postline.dev',
      subject: 's',
      text: 't',
    });

    // In flight: the headers and half the body are sent, the rest comes once the shutdown has begun.
    const socket = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    socket.on('data', (c) => received.push(c));
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    // The server has the request once its headers are read (its handlers run within the same turn).
    const inFlight = new Promise((resolve) =>
      svc.postline.server!.once('request', () => setImmediate(resolve)),
    );
    socket.write(
      `POST /v1/emails HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.testKey}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`,
    );
    await inFlight;

    const closing = svc.close();
    const turnedAway = await request(`http://127.0.0.1:${port}/v1/emails`, {
      method: 'POST',
      headers: { authorization: `Bearer ${org.testKey}`, 'content-type': 'application/json' },
      body,
    });
    expect(turnedAway.statusCode).toBe(503);
    expect(turnedAway.headers['retry-after']).toBe('1');
    expect(turnedAway.headers.connection).toBe('close');
    expect(await turnedAway.body.json()).toEqual({
      error: { type: 'api_error', code: 'shutting_down', message: expect.any(String) },
    });

    socket.write(body.slice(10));
    await ended;
    const answer = Buffer.concat(received).toString();
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer.toLowerCase()).toContain('connection: close');
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).id).toMatch(/^em_/);
    await closing;
    await expect(request(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
  });

  it('ends a wait for read models still under way with 503 projection_timeout, not at its deadline', async () => {
    // Ten minutes to wait: without the close ending it, the wait outlives the test's time-out.
    const svc = await startTestService({ env: { PROJECTION_WAIT_MS: '600000' } });
    const never = '99999999999999999999.99999999999999999999';
    const waiting = svc.postline.services.readYourWrites.waitFor(['emails'], never);
    const outcome = waiting.then(
      () => 'returned',
      (error) => error,
    );
    await svc.close();
    expect(await outcome).toMatchObject({ code: 'projection_timeout', status: 503 });
  });

  it('answers SMTP commands 421 once it shuts down, and stops listening', async () => {
    const svc = await startTestService({ env: { SMTP_SUBMISSION_PORT: '0', SHUTDOWN_GRACE_MS: '10000' } });
    const port = svc.postline.smtp!.submissionPort!;
    const c = await rawSmtp(port);
    expect((await c.command('EHLO client.test')).code).toBe(250);
    const closing = svc.close();
    const reply = await c.command('NOOP');
    expect(reply.code).toBe(421);
    c.close();
    await closing;
    await expect(rawSmtp(port)).rejects.toThrow();
  });
});
