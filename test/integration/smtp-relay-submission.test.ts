import { describe, expect, it } from 'vitest';
import { SEND_TIME_RULE } from '../../domain/emails/send-time.ts';
import { REPLIES } from '../../smtp/replies.ts';
import { authPlain, type RawSmtp, rawSmtp } from '../support/raw-smtp.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

/**
 * What the relay makes of a submitted message's headers and envelope, and the replies it gives to the rules they
 * break (docs/smtp.md). Test keys: messages go to the simulator, so no domain is needed.
 */

const svc = useTestService({ env: { SMTP_SUBMISSION_PORT: '0', SMTP_ALLOW_INSECURE_AUTH: 'true' } });
const port = () => svc.postline.smtp!.submissionPort!;
const TO = 'delivered@simulator.postline.dev';

/** An authenticated session (no TLS: SMTP_ALLOW_INSECURE_AUTH). */
async function session(org: TestOrg): Promise<RawSmtp> {
  const c = await rawSmtp(port());
  expect((await c.command('EHLO client.test')).code).toBe(250);
  expect((await c.command(`AUTH PLAIN ${authPlain(org.testKey)}`)).code).toBe(235);
  return c;
}

/** One message to the simulator in a session of its own; the reply to its end of data. */
async function submit(org: TestOrg, message: string) {
  const c = await session(org);
  try {
    expect((await c.command('MAIL FROM:<dev@any.test>')).code).toBe(250);
    expect((await c.command(`RCPT TO:<${TO}>`)).code).toBe(250);
    expect((await c.command('DATA')).code).toBe(354);
    c.write(`${message}\r\n.\r\n`);
    return await c.reply();
  } finally {
    c.close();
  }
}

const listed = async (org: TestOrg) => (await org.test.get('/v1/emails?limit=100')).body.data as any[];

describe('the relay and the From header', () => {
  it.each([
    ['two From fields', 'From: dev@any.test\r\nFrom: ceo@other.test\r\n'],
    ['two From fields spelled apart', 'FROM: dev@any.test\r\nfrom: ceo@other.test\r\n'],
  ])('refuses a message with %s (550 5.6.0), and keeps nothing of it', async (_, from) => {
    const org = await svc.createOrg('pro');
    const reply = await submit(org, `${from}To: ${TO}\r\nSubject: two senders\r\n\r\nhi`);
    expect(reply).toEqual({
      code: 550,
      text: '5.6.0 From: the message needs exactly one From header, with one address',
    });
    expect(await listed(org)).toEqual([]);
  });

  it('takes a From with its display name in a comment (RFC 5322)', async () => {
    const org = await svc.createOrg('pro');
    const reply = await submit(
      org,
      `From: dev@any.test (Any Team)\r\nTo: ${TO}\r\nSubject: commented\r\n\r\nhi`,
    );
    const id = /^2\.0\.0 Ok: queued as (em_[0-9a-z]+)$/.exec(reply.text)?.[1];
    expect(id, reply.text).toBeDefined();
    // The read model follows the 250 within moments.
    await expect
      .poll(async () => (await org.test.get(`/v1/emails/${id}`)).body)
      .toMatchObject({ from: 'Any Team <dev@any.test>', to: [TO] });
  });
});

describe('the relay’s option headers', () => {
  it.each([
    ['X-Postline-Send-At: 2001-01-01T00:00:00Z', 'X-Postline-Send-At: must be in the future'],
    ['X-Postline-Send-At: 2999-01-01T00:00:00Z', 'X-Postline-Send-At: must be at most 30 days ahead'],
    ['X-Postline-Send-At: in 1 hour please', `X-Postline-Send-At: ${SEND_TIME_RULE}`],
    ['X-Postline-Send-At: in 31 days', 'X-Postline-Send-At: must be at most 30 days ahead'],
    [
      `X-Postline-Idempotency-Key: ${'k'.repeat(256)}`,
      'X-Postline-Idempotency-Key: must be 1 to 255 printable ASCII characters',
    ],
    [
      'X-Postline-Idempotency-Key:',
      'X-Postline-Idempotency-Key: must be 1 to 255 printable ASCII characters',
    ],
    ['X-Postline-Tags: a\r\nX-Postline-Tags: b', 'X-Postline-Tags: give it once'],
    ['X-Postline-Topic: weekly', 'X-Postline-Topic: must be a topic id (top_...)'],
    [
      'X-Postline-Send-At: 2999-01-01T00:00:00Z\r\nx-postline-send-at: 2999-01-02T00:00:00Z',
      'X-Postline-Send-At: give it once',
    ],
  ])('refuses %.60s naming the header (550 5.6.0)', async (header, text) => {
    const org = await svc.createOrg('pro');
    const reply = await submit(org, `From: dev@any.test\r\nTo: ${TO}\r\n${header}\r\nSubject: s\r\n\r\nhi`);
    expect(reply).toEqual({ code: 550, text: `5.6.0 ${text}` });
    expect(await listed(org)).toEqual([]);
  });
});

describe('the relay’s X-Postline-Send-At in words', () => {
  it('schedules the email at the time the words mean when the message arrives, in UTC', async () => {
    const org = await svc.createOrg('pro');
    const before = Date.now();
    const reply = await submit(
      org,
      `From: dev@any.test\r\nTo: ${TO}\r\nX-Postline-Send-At: in 2 hours\r\n\r\nhi`,
    );
    const after = Date.now();
    const id = /^2\.0\.0 Ok: queued as (em_[0-9a-z]+)$/.exec(reply.text)?.[1];
    expect(id, reply.text).toBeDefined();
    await expect
      .poll(async () => (await org.test.get(`/v1/emails/${id}`)).body)
      .toMatchObject({ status: 'scheduled' });
    const sendAt = Date.parse((await org.test.get(`/v1/emails/${id}`)).body.send_at);
    expect(sendAt).toBeGreaterThanOrEqual(before + 7200_000);
    expect(sendAt).toBeLessThanOrEqual(after + 7200_000);
  });
});

describe('the relay’s X-Postline-Topic', () => {
  it('sends about the topic to the recipients it reaches, and refuses a message it reaches none of', async () => {
    const org = await svc.createOrg('pro');
    const topic = async (default_subscription: string) =>
      (await org.test.post('/v1/topics', { name: default_subscription, default_subscription })).body.id;
    const [optIn, optOut] = [await topic('opt_in'), await topic('opt_out')];
    const message = (id: string) => `From: dev@any.test\r\nTo: ${TO}\r\nX-Postline-Topic: ${id}\r\n\r\nhi`;
    const reply = await submit(org, message(optIn));
    const id = /^2\.0\.0 Ok: queued as (em_[0-9a-z]+)$/.exec(reply.text)?.[1];
    expect(id, reply.text).toBeDefined();
    await expect
      .poll(async () => (await org.test.get(`/v1/emails/${id}`)).body)
      .toMatchObject({ to: [TO], topic_id: optIn, unsubscribed_recipients: [] });
    expect(await submit(org, message(optOut))).toEqual({
      code: 550,
      text: `5.6.0 No recipient receives emails about topic ${optOut}: ${TO}.`,
    });
    expect(await submit(org, message('top_01nothere'))).toEqual({
      code: 550,
      text: '5.6.0 X-Postline-Topic: topic top_01nothere not found',
    });
    expect((await listed(org)).map((e) => e.id)).toEqual([id]);
  });
});

describe('the relay’s extensions', () => {
  it('announces SIZE and refuses a larger SIZE= at MAIL with the catalogue’s 552 5.3.4; the session goes on', async () => {
    const org = await svc.createOrg('pro');
    const c = await rawSmtp(port());
    const ehlo = await c.command('EHLO client.test');
    expect(ehlo.text.split('\n')).toContain('SIZE 41943040');
    expect((await c.command(`AUTH PLAIN ${authPlain(org.testKey)}`)).code).toBe(235);
    const declared = await c.command('MAIL FROM:<dev@any.test> SIZE=41943041');
    expect(declared).toEqual({ code: 552, text: `5.3.4 ${REPLIES.messageTooBig[2]}` });
    expect((await c.command('MAIL FROM:<dev@any.test> SIZE=41943040')).code).toBe(250);
    c.close();
  });

  it('offers 8BITMIME and PIPELINING, not SMTPUTF8: addresses are ASCII, IDN domains aside', async () => {
    const c = await rawSmtp(port());
    const features = (await c.command('EHLO client.test')).text.split('\n');
    expect(features).toEqual(expect.arrayContaining(['8BITMIME', 'PIPELINING']));
    expect(features).not.toContain('SMTPUTF8');
    c.close();
  });
});
