import nodemailer from 'nodemailer';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { REPLIES } from '../../smtp/replies.ts';
import { PATIENCE } from '../support/patience.ts';
import { freePort } from '../support/process.ts';
import { authPlain, type RawSmtp, rawSmtp } from '../support/raw-smtp.ts';
import { startTestService, type TestOrg, type TestService, useTestService } from '../support/service.ts';

/**
 * The relay counts each message in its organization's budget of RATE_LIMIT_RPS, the one the API's requests count
 * in (docs/smtp.md, docs/api.md): past it, 451 4.7.0 until the window ends, and nothing of the refused message is
 * kept. Messages go to the simulator with test keys, so no domain is needed.
 */

const LIMIT = 3;
/** The reply past the limit, as docs/smtp.md spells it (the clock stands still: the window ends in 1 s). */
const REFUSED = {
  code: 451,
  text: `4.7.0 Too many messages: at most ${LIMIT} per second for your organization, API requests included; send it again in 1 s`,
};

// The service's clock stands still unless a test moves it: a test's steps fall into one window of the limit.
const clock = new ManualClock(new Date());
const svc = useTestService({
  clock,
  env: { RATE_LIMIT_RPS: String(LIMIT), SMTP_SUBMISSION_PORT: '0', SMTP_ALLOW_INSECURE_AUTH: 'true' },
});
const portOf = (service: Pick<TestService, 'postline'>) => service.postline.smtp!.submissionPort!;

/** An authenticated session (no TLS: SMTP_ALLOW_INSECURE_AUTH). */
async function session(port: number, key: string): Promise<RawSmtp> {
  const c = await rawSmtp(port);
  expect((await c.command('EHLO client.test')).code).toBe(250);
  expect((await c.command(`AUTH PLAIN ${authPlain(key)}`)).code).toBe(235);
  return c;
}

/** One message in the session: MAIL, RCPT, DATA; the reply to its end of data. */
async function submit(c: RawSmtp, subject: string) {
  expect((await c.command('MAIL FROM:<dev@any.test>')).code).toBe(250);
  expect((await c.command('RCPT TO:<delivered@simulator.postline.dev>')).code).toBe(250);
  expect((await c.command('DATA')).code).toBe(354);
  c.write(
    `From: dev@any.test\r\nTo: delivered@simulator.postline.dev\r\nSubject: ${subject}\r\n\r\nhi\r\n.\r\n`,
  );
  return c.reply();
}

/** The email id in `250 2.0.0 Ok: queued as em_…`. */
const queuedId = (reply: { code: number; text: string }) => {
  const m = /^2\.0\.0 Ok: queued as (em_[0-9a-z]+)$/.exec(reply.text);
  expect(m, `${reply.code} ${reply.text}`).not.toBeNull();
  return m![1];
};

/** The emails the log holds for the organization (their EmailQueued), in the order they were appended. */
const queuedInLog = async (service: Pick<TestService, 'postline'>, org: TestOrg) =>
  (await service.postline.services.store.readAll())
    .filter((e) => e.type === 'EmailQueued' && e.metadata.orgId === org.orgId)
    .map((e) => e.streamId.replace(/^email-/, ''));

describe('the SMTP relay past the organization’s rate limit', () => {
  it('answers 451 4.7.0 with the documented text, keeps what it accepted before, records nothing of the refused message, and accepts again in the next window', async () => {
    const org = await svc.createOrg('pro');
    const c = await session(portOf(svc), org.testKey);
    const accepted: string[] = [];
    for (let i = 0; i < LIMIT; i++) accepted.push(queuedId(await submit(c, `within ${i}`)));
    expect(await submit(c, 'one too many')).toEqual(REFUSED);
    // A retry within the window is refused alike; the session stays usable.
    expect(await submit(c, 'one too many')).toEqual(REFUSED);
    // As the API's 429, the limit's refusal comes before the message's own (here a bare LF, otherwise 554).
    expect(await submit(c, 'bare\nline feed')).toEqual(REFUSED);
    expect((await c.command('NOOP')).code).toBe(250);

    clock.advance(1000);
    accepted.push(queuedId(await submit(c, 'next window')));
    c.close();
    // The log holds the accepted messages, each once, and nothing of the refused ones.
    await expect.poll(() => queuedInLog(svc, org), PATIENCE).toEqual(accepted);
  });

  it('shares one budget with the API’s requests, of both modes, in both directions', async () => {
    clock.advance(1000);
    const org = await svc.createOrg('pro');
    expect((await org.live.get('/v1/api-keys')).headers['x-ratelimit-remaining']).toBe('2');
    const c = await session(portOf(svc), org.testKey);
    queuedId(await submit(c, 'between requests'));
    // The message took one from the API's budget.
    const request = await org.test.get('/v1/api-keys');
    expect([request.status, request.headers['x-ratelimit-remaining']]).toEqual([200, '0']);
    // The API used up the budget: the relay refuses, and the refused message is counted as the API counts a 429.
    expect(await submit(c, 'over')).toEqual(REFUSED);
    const refused = await org.test.get('/v1/api-keys');
    expect([refused.status, refused.body.error.code]).toEqual([429, 'rate_limit_exceeded']);
    c.close();
  });

  it('leaves another organization’s budget alone (nodemailer)', async () => {
    clock.advance(1000);
    const [busy, quiet] = [await svc.createOrg('pro'), await svc.createOrg('pro')];
    const c = await session(portOf(svc), busy.testKey);
    for (let i = 0; i < LIMIT; i++) queuedId(await submit(c, `busy ${i}`));
    expect(await submit(c, 'busy over')).toEqual(REFUSED);
    c.close();

    const transport = (key: string) =>
      nodemailer.createTransport({
        host: '127.0.0.1',
        port: portOf(svc),
        ignoreTLS: true,
        auth: { user: 'postline', pass: key },
      });
    const mail = {
      from: 'dev@any.test',
      to: 'delivered@simulator.postline.dev',
      subject: 'quiet',
      text: 'hi',
    };
    const info = await transport(quiet.testKey).sendMail(mail);
    expect(info.response).toMatch(/^250 2\.0\.0 Ok: queued as em_/);
    expect((await quiet.live.get('/v1/api-keys')).status).toBe(200);
    // A real client sees the refusal as its MTA would: a temporary failure, with the reply's text.
    await expect(transport(busy.testKey).sendMail(mail)).rejects.toMatchObject({
      responseCode: 451,
      response: `451 ${REFUSED.text}`,
    });
  });
});

describe('the SMTP relay when its rate-limit counters are unavailable', () => {
  it('answers 451 4.3.0 as the API answers 503, records nothing, and keeps the session', async () => {
    const redisAway = await startTestService({
      env: {
        // Nothing listens there: every count fails, as while Redis restarts.
        REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
        SMTP_SUBMISSION_PORT: '0',
        SMTP_ALLOW_INSECURE_AUTH: 'true',
      },
    });
    try {
      const org = await redisAway.createOrg('pro');
      // A valid key is authenticated without the counters (only failures are counted).
      const c = await session(portOf(redisAway), org.testKey);
      expect(await submit(c, 'uncounted')).toEqual({
        code: 451,
        text: `${REPLIES.storageFailure[1]} ${REPLIES.storageFailure[2]}`,
      });
      expect((await c.command('NOOP')).code).toBe(250);
      c.close();
      expect(await queuedInLog(redisAway, org)).toEqual([]);
    } finally {
      await redisAway.close();
    }
  }, 300_000); // each count waits for the client's reconnection attempts before it fails
});
