import { describe, expect, it } from 'vitest';
import { webhookStream } from '../../domain/webhooks/webhook.events.ts';
import { newId } from '../../platform/ids.ts';
import { WebhookDispatcher } from '../../processes/webhooks/dispatcher.process.ts';
import { FAN_OUT_NAME } from '../../processes/webhooks/fan-out.process.ts';
import { sign } from '../../processes/webhooks/signer.ts';
import { generateSigningSecret } from '../../write-side/webhooks/webhook.commands.ts';
import type { TestOrg } from '../support/service.ts';
import { useWebhookProcesses } from '../support/webhook-processes.ts';
import {
  appendSourceEvent,
  emailQueuedData,
  type ReceivedWebhook,
  type WebhookReceiver,
} from '../support/webhook-receiver.ts';

const { clock, svc, processes, receiver, pump, subscribed } = useWebhookProcesses();

const store = () => svc.postline.services.store;

async function webhookFor(
  org: TestOrg,
  r: WebhookReceiver,
  events: string[] = ['*'],
  mode: 'live' | 'test' = 'live',
) {
  return r.subscribe(org[mode], events);
}

async function sendEmail(org: TestOrg, mode: 'live' | 'test' = 'live') {
  const emailId = newId('em');
  await appendSourceEvent(
    store(),
    `email-${emailId}`,
    'EmailQueued',
    emailQueuedData(emailId, org.orgId, mode),
    { orgId: org.orgId, mode },
  );
  const sent = () =>
    appendSourceEvent(
      store(),
      `email-${emailId}`,
      'EmailSent',
      { emailId, messageId: `<${emailId}@acme.test>`, sentAt: clock.now().toISOString() },
      { orgId: org.orgId, mode },
    );
  return {
    emailId,
    sent,
    append: (type: string, data: Record<string, unknown>) =>
      appendSourceEvent(store(), `email-${emailId}`, type, { emailId, ...data }, { orgId: org.orgId, mode }),
  };
}

const deliveries = async (org: TestOrg, webhookId: string, mode: 'live' | 'test' = 'live') =>
  (await org[mode].get(`/v1/webhooks/${webhookId}/deliveries?limit=100`)).body.data as any[];

describe('webhook fan-out and dispatch', () => {
  it('sends a signed test event when a webhook is created', async () => {
    const { org, r, wh } = await subscribed(['*']);
    expect(r.received).toHaveLength(1);
    const [got] = r.received;
    expect(got.verifiedWith).toEqual([wh.signing_secret]);
    expect(got.payload).toMatchObject({ type: 'webhook.test', id: got.id, data: { webhook_id: wh.id } });
    expect(got.id).toMatch(/^whl_/);
    expect(got.timestamp).toBe(Math.floor(clock.now().getTime() / 1000));
    const [log] = await deliveries(org, wh.id);
    expect(log).toMatchObject({ id: got.id, status: 'succeeded', event_type: 'webhook.test' });
    expect(log.attempts).toHaveLength(1);
    expect(log.attempts[0]).toMatchObject({
      attempt: 1,
      response_status: 200,
      response_excerpt: 'ok',
      error: null,
    });
    expect(log.attempts[0].latency_ms).toBeGreaterThanOrEqual(0);
    const after = await org.live.get(`/v1/webhooks/${wh.id}`);
    expect(after.body.last_success_at).toBe(clock.now().toISOString());
  });

  it('fans events out to the matching subscriptions of the same organization and mode, exactly once', async () => {
    const org = await svc.createOrg('pro');
    const stranger = await svc.createOrg('pro');
    const live = await receiver();
    const test = await receiver();
    const liveHook = await webhookFor(org, live, ['email.bounced', 'email.clicked', 'domain.verified']);
    const testHook = await webhookFor(org, test, ['*'], 'test');
    await pump();

    const email = await sendEmail(org);
    await email.sent();
    await email.append('EmailDelivered', {
      recipient: 'ada@example.test',
      smtpResponse: '250 ok',
      deliveredAt: clock.now().toISOString(),
    });
    await email.append('EmailBounced', {
      recipient: 'ada@example.test',
      bounceType: 'hard',
      smtpCode: 550,
      smtpResponse: '550 5.1.1 unknown user',
      bouncedAt: '2026-05-01T10:00:00.000Z',
    });
    await email.append('EmailClicked', {
      link: 'https://acme.test/start',
      userAgent: 'Mail/1',
      ip: '203.0.113.9',
      clickedAt: '2026-05-01T11:00:00.000Z',
    });
    await appendSourceEvent(
      store(),
      'domain-dom_x',
      'DomainVerified',
      { domainId: 'dom_x', name: 'acme.test', verifiedAt: '2026-05-01T12:00:00.000Z' },
      { orgId: org.orgId, mode: 'live' },
    );
    const testEmail = await sendEmail(org, 'test');
    await testEmail.sent();
    const foreign = await sendEmail(stranger);
    await foreign.append('EmailBounced', {
      recipient: 'x@y.test',
      bounceType: 'soft',
      smtpCode: null,
      smtpResponse: 'timeout',
      bouncedAt: '2026-05-01T10:00:00.000Z',
    });
    await pump();

    // Deliveries to one endpoint go out side by side and may arrive in any order (docs/webhooks.md).
    const liveTypes = live.received.map((d) => d.payload.type);
    expect(liveTypes.sort()).toEqual(['domain.verified', 'email.bounced', 'email.clicked', 'webhook.test']);
    const ofType = (type: string) => live.received.find((d) => d.payload.type === type)!;
    expect(
      live.received.every(
        (d) => d.verifiedWith.length === 1 && d.verifiedWith[0] === liveHook.signing_secret,
      ),
    ).toBe(true);
    const bounce = ofType('email.bounced').payload;
    expect(bounce.id).toBe(ofType('email.bounced').id);
    expect(bounce.data).toEqual({
      email_id: email.emailId,
      from: 'Acme <hello@acme.test>',
      to: ['ada@example.test'],
      subject: 'Welcome aboard',
      tags: ['welcome'],
      timestamp: '2026-05-01T10:00:00.000Z',
      recipient: 'ada@example.test',
      bounce: {
        type: 'hard',
        classification: 'invalid_recipient',
        smtp_code: 550,
        message: '550 5.1.1 unknown user',
      },
    });
    // An event of an earlier version holds the clicker's client in clear: the payload still carries none of it.
    expect(ofType('email.clicked').payload.data.click).toEqual({
      link: 'https://acme.test/start',
      user_agent: null,
    });
    expect(JSON.stringify(ofType('email.clicked').payload)).not.toContain('203.0.113.9');
    expect(JSON.stringify(ofType('email.clicked').payload)).not.toContain('Mail/1');
    expect(ofType('domain.verified').payload.data).toMatchObject({ domain_id: 'dom_x', name: 'acme.test' });

    expect(test.received.map((d) => d.payload.type)).toEqual(['webhook.test', 'email.sent']);
    expect(test.received[1].payload.data.email_id).toBe(testEmail.emailId);
    expect(test.received[1].verifiedWith).toEqual([testHook.signing_secret]);

    // Replaying the whole log through the fan-out records nothing twice.
    const count = async () =>
      (await svc.postline.services.db.query('SELECT count(*)::int AS n FROM webhook_deliveries')).rows[0].n;
    const before = await count();
    await svc.postline.services.db.query(`UPDATE process_checkpoints SET position = '' WHERE name = $1`, [
      FAN_OUT_NAME,
    ]);
    await pump();
    expect(await count()).toBe(before);
    expect(live.received).toHaveLength(4);
  });

  it('signs with both secrets for 24 hours after a rotation, then with the new one only', async () => {
    const { org, r, wh } = await subscribed();
    const rotated = await org.live.post(`/v1/webhooks/${wh.id}/rotate-secret`);
    r.secrets.push(rotated.body.signing_secret);
    await (await sendEmail(org)).sent();
    await pump();
    const during = r.received.at(-1)!;
    expect(during.payload.type).toBe('email.sent');
    expect(during.signatures).toHaveLength(2);
    expect(during.verifiedWith.sort()).toEqual([wh.signing_secret, rotated.body.signing_secret].sort());

    clock.set(new Date(Date.parse(rotated.body.previous_secret_expires_at) + 1000));
    await (await sendEmail(org)).sent();
    await pump();
    const after = r.received.at(-1)!;
    expect(after.signatures).toHaveLength(1);
    expect(after.verifiedWith).toEqual([rotated.body.signing_secret]);
  });

  it('signs with the new secret only after a rotation told to end the overlap at once (a secret that leaked)', async () => {
    const { org, r, wh } = await subscribed();
    const first = await org.live.post(`/v1/webhooks/${wh.id}/rotate-secret`);
    const now = clock.now().toISOString();
    const leaked = await org.live.post(`/v1/webhooks/${wh.id}/rotate-secret`, {
      previous_secret_expires_in: 0,
    });
    expect(leaked.status, JSON.stringify(leaked.body)).toBe(200);
    expect(leaked.body.previous_secret_expires_at).toBe(now);
    r.secrets.push(first.body.signing_secret, leaked.body.signing_secret);
    await (await sendEmail(org)).sent();
    await pump();
    const got = r.received.at(-1)!;
    expect(got.payload.type).toBe('email.sent');
    expect(got.signatures).toHaveLength(1);
    expect(got.verifiedWith).toEqual([leaked.body.signing_secret]);
  });

  it('keeps signing with every secret whose overlap has not ended when rotated twice, newest first', async () => {
    const { org, r, wh } = await subscribed();
    const first = await org.live.post(`/v1/webhooks/${wh.id}/rotate-secret`);
    clock.set(new Date(clock.now().getTime() + 3600_000));
    const second = await org.live.post(`/v1/webhooks/${wh.id}/rotate-secret`);
    r.secrets.push(first.body.signing_secret, second.body.signing_secret);
    const newestFirst = [second.body.signing_secret, first.body.signing_secret, wh.signing_secret];
    const signedWith = (got: ReceivedWebhook) =>
      newestFirst.filter((secret) => got.signatures.includes(sign(secret, got.id, got.timestamp, got.body)));
    const next = async () => {
      await (await sendEmail(org)).sent();
      await pump();
      const got = r.received.at(-1)!;
      expect(got.payload.type).toBe('email.sent');
      expect(got.verifiedWith.length).toBe(got.signatures.length);
      return got;
    };

    // The original secret signs until the first rotation promised, though a second one came meanwhile.
    const during = await next();
    expect(signedWith(during)).toEqual(newestFirst);
    expect(during.signatures).toEqual(
      newestFirst.map((s) => sign(s, during.id, during.timestamp, during.body)),
    );

    clock.set(new Date(Date.parse(first.body.previous_secret_expires_at) + 1000));
    expect(signedWith(await next())).toEqual(newestFirst.slice(0, 2));

    clock.set(new Date(Date.parse(second.body.previous_secret_expires_at) + 1000));
    expect(signedWith(await next())).toEqual(newestFirst.slice(0, 1));
  });

  it('signs as a rotation recorded before several previous secrets were kept said: with its previous secret', async () => {
    const { org, r, wh } = await subscribed();
    const secret = generateSigningSecret();
    const at = clock.now();
    // The shape WebhookSecretRotated had then: no `olderSecrets`.
    await store().append(
      webhookStream(wh.id),
      [
        {
          type: 'WebhookSecretRotated',
          data: {
            webhookId: wh.id,
            sealedSecret: svc.postline.services.secrets.seal(secret),
            previousSealedSecret: svc.postline.services.secrets.seal(wh.signing_secret),
            previousValidUntil: new Date(at.getTime() + 3600_000).toISOString(),
            rotatedAt: at.toISOString(),
          },
          metadata: { orgId: org.orgId, mode: 'live', actor: 'test' },
        },
      ],
      { expectedRevision: 'any' },
    );
    r.secrets.push(secret);
    await (await sendEmail(org)).sent();
    await pump();
    const got = r.received.at(-1)!;
    expect(got.payload.type).toBe('email.sent');
    expect(got.signatures).toEqual(
      [secret, wh.signing_secret].map((s) => sign(s, got.id, got.timestamp, got.body)),
    );
    expect(got.verifiedWith.sort()).toEqual([secret, wh.signing_secret].sort());
  });

  it('retries a delivery on request', async () => {
    const { org, r, wh } = await subscribed();
    r.respond = () => ({ status: 500, body: 'boom' });
    await (await sendEmail(org)).sent();
    await pump();
    const [failed] = await deliveries(org, wh.id);
    expect(failed).toMatchObject({ status: 'pending', last_response_status: 500 });
    expect(failed.attempts).toEqual([
      expect.objectContaining({ attempt: 1, response_status: 500, response_excerpt: 'boom' }),
    ]);

    r.respond = () => ({ status: 204 });
    const retry = await org.live.post(`/v1/webhooks/${wh.id}/deliveries/${failed.id}/retry`);
    expect(retry.status).toBe(202);
    await pump();
    const [done] = await deliveries(org, wh.id);
    expect(done.status).toBe('succeeded');
    expect(done.attempts.map((a: any) => a.response_status)).toEqual([500, 204]);
    expect(r.received.at(-1)!.id).toBe(failed.id);
    expect(r.received.at(-1)!.body).toBe(r.received.at(-2)!.body);
  });

  it("keeps a first attempt that succeeded in the delivery log, and a retry's attempt beside it", async () => {
    const { org, r, wh } = await subscribed();
    r.respond = () => ({ status: 200, body: 'first' });
    await (await sendEmail(org)).sent();
    await pump();
    const attemptRows = async (id: string) =>
      (
        await svc.postline.services.db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM webhook_attempts WHERE delivery_id = $1',
          [id],
        )
      ).rows[0].n;
    const [first] = await deliveries(org, wh.id);
    expect(first).toMatchObject({ status: 'succeeded', last_response_status: 200 });
    expect(first.attempts).toEqual([
      {
        attempt: 1,
        attempted_at: clock.now().toISOString(),
        response_status: 200,
        latency_ms: expect.any(Number),
        response_excerpt: 'first',
        error: null,
      },
    ]);
    expect(await attemptRows(first.id)).toBe(1);

    const firstAt = clock.now().toISOString();
    clock.advance(1000);
    r.respond = () => ({ status: 202, body: 'again' });
    expect((await org.live.post(`/v1/webhooks/${wh.id}/deliveries/${first.id}/retry`)).status).toBe(202);
    await pump();
    const [again] = await deliveries(org, wh.id);
    expect(again.status).toBe('succeeded');
    expect(again.attempts).toEqual([
      expect.objectContaining({
        attempt: 1,
        attempted_at: firstAt,
        response_status: 200,
        response_excerpt: 'first',
      }),
      expect.objectContaining({
        attempt: 1,
        attempted_at: clock.now().toISOString(),
        response_status: 202,
        response_excerpt: 'again',
      }),
    ]);
    expect(await attemptRows(first.id)).toBe(2);
  });

  it('records a 2xx whose body carries NUL bytes as succeeded, the excerpt cleaned', async () => {
    // PostgreSQL refuses \u0000 in text: the receiver's body must not keep the success from being recorded.
    const org = await svc.createOrg('pro');
    const r = await receiver();
    r.respond = () => ({ status: 200, body: 'ok\u0000\u0000done' });
    const wh = await webhookFor(org, r);
    await pump();
    const [log] = await deliveries(org, wh.id);
    expect(log.status).toBe('succeeded');
    expect(log.attempts[0]).toMatchObject({ response_status: 200, response_excerpt: 'okdone' });
  });

  it('does not count against the endpoint a failure whose delivery was reset while in flight', async () => {
    const { org, r, wh } = await subscribed();
    const release = r.hold(500);
    await (await sendEmail(org)).sent();
    await processes.fanOut.runOnce();
    const inFlight = processes.dispatcher.runOnce();
    let deliveryId = '';
    try {
      deliveryId = (await r.waitFor(2))[1].id;
      const retry = await org.live.post(`/v1/webhooks/${wh.id}/deliveries/${deliveryId}/retry`);
      expect(retry.status).toBe(202);
      await processes.fanOut.runOnce(); // the reset lands while the request is held
    } finally {
      release();
    }
    await inFlight;
    // The same run sent the reset delivery again (500 at once now): that failure counts, the discarded one not.
    const endpoint = (await org.live.get(`/v1/webhooks/${wh.id}`)).body;
    expect(endpoint.consecutive_failures).toBe(1);
    const reset = (await deliveries(org, wh.id)).find((d) => d.id === deliveryId);
    expect(reset).toMatchObject({ status: 'pending', last_response_status: 500 });
  });

  it('replays what an endpoint missed while it was down or switched off, under the original delivery ids', async () => {
    const { org, r, wh } = await subscribed(['email.*']);
    const since = new Date(Date.now() - 1000).toISOString();
    r.respond = () => ({ status: 503 });
    const first = await sendEmail(org);
    await first.sent();
    await pump();
    const [missed] = await deliveries(org, wh.id);
    expect(missed.status).toBe('pending');

    expect((await org.live.patch(`/v1/webhooks/${wh.id}`, { active: false })).status).toBe(200);
    const second = await sendEmail(org);
    await second.sent();
    clock.advance(60_000);
    await pump(); // the pending retry falls due on a switched-off endpoint: canceled, not sent
    const whileOff = await deliveries(org, wh.id);
    expect(whileOff.map((d) => d.status)).toEqual(['canceled', 'succeeded']);

    r.respond = () => ({ status: 200 });
    await org.live.patch(`/v1/webhooks/${wh.id}`, { active: true });
    const replay = await org.live.post(`/v1/webhooks/${wh.id}/replay`, { since });
    expect(replay.status).toBe(202);
    const before = r.received.length;
    await pump();
    const replayed = r.received.slice(before);
    expect(replayed.map((d) => d.payload.data.email_id).sort()).toEqual(
      [first.emailId, second.emailId].sort(),
    );
    expect(replayed.find((d) => d.payload.data.email_id === first.emailId)!.id).toBe(missed.id);
    expect(replayed.every((d) => d.verifiedWith.length === 1)).toBe(true);
    const log = await deliveries(org, wh.id);
    expect(log.filter((d) => d.status === 'succeeded')).toHaveLength(3);
    // The replay reached its end: its due row is gone.
    const { rows } = await svc.postline.services.db.query('SELECT id FROM webhook_replays WHERE id = $1', [
      replay.body.id,
    ]);
    expect(rows).toEqual([]);
  });

  it('does not let a slow endpoint hold up the others', async () => {
    const org = await svc.createOrg('pro');
    const slow = await receiver();
    const fast = await receiver();
    const release = slow.hold(200);
    await webhookFor(org, slow, ['email.sent']);
    await webhookFor(org, fast, ['email.sent']);
    for (let i = 0; i < 4; i++) await (await sendEmail(org)).sent();
    await processes.fanOut.runOnce();
    const busy = new WebhookDispatcher(svc.postline.services, { concurrency: 4, perEndpoint: 2, pollMs: 50 });
    busy.start();
    try {
      await fast.waitFor(5); // the test event and four emails, all while the slow endpoint holds its requests
      expect(slow.received.length).toBeLessThanOrEqual(2);
      release();
      await slow.waitFor(5);
      expect(slow.received.every((d) => d.verifiedWith.length === 1)).toBe(true);
    } finally {
      release();
      await busy.stop();
    }
  });

  it('gives up on an endpoint that does not answer in time, and retries later', async () => {
    const org = await svc.createOrg('pro');
    const r = await receiver();
    const release = r.hold(200);
    const wh = await webhookFor(org, r, ['email.sent']);
    await processes.fanOut.runOnce();
    const impatient = new WebhookDispatcher(svc.postline.services, { timeoutMs: 200 });
    try {
      await impatient.runOnce();
    } finally {
      release();
      await impatient.stop();
    }
    const [d] = await deliveries(org, wh.id);
    expect(d.status).toBe('pending');
    expect(d.attempts[0]).toMatchObject({ response_status: null, error: 'no response within 0.2 s' });
  });

  it('refuses internal addresses when private networks are not allowed', async () => {
    await pump(); // nothing else due, so the guarded dispatcher below sees only these
    const org = await svc.createOrg('business');
    const r = await receiver();
    const urls = [
      `http://127.0.0.1:${r.port}/hooks`,
      `http://localhost:${r.port}/hooks`,
      `http://[::1]:${r.port}/hooks`,
      `http://[::ffff:127.0.0.1]:${r.port}/hooks`,
      `http://[::ffff:7f00:1]:${r.port}/hooks`,
      `http://2130706433:${r.port}/hooks`,
      'http://169.254.169.254/latest/meta-data',
      'http://10.0.0.1/hooks',
      'http://[fd00::1]/hooks',
    ];
    const ids: string[] = [];
    for (const url of urls) ids.push((await org.live.post('/v1/webhooks', { url, events: ['*'] })).body.id);
    await processes.fanOut.runOnce();
    const guarded = new WebhookDispatcher(svc.postline.services, { allowPrivateNetworks: false });
    try {
      expect(await guarded.runOnce()).toBe(urls.length);
    } finally {
      await guarded.stop();
    }
    expect(r.received).toHaveLength(0);
    for (const [i, id] of ids.entries()) {
      const [d] = await deliveries(org, id);
      expect(d.attempts[0].error, urls[i]).toMatch(/^blocked: /);
      expect(d.attempts[0].response_status).toBeNull();
      await org.live.delete(`/v1/webhooks/${id}`);
    }
  });
});
