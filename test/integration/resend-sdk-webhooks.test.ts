import { Resend } from 'resend';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { documentCheckingFetch } from '../support/openapi-responses.ts';
import { PATIENCE } from '../support/patience.ts';
import { type TestOrg, useTestService } from '../support/service.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * Resend's SDK managing Postline's webhooks (`resend.webhooks`), and verifying a delivery Postline signed, with
 * the service's processes running so that a real delivery reaches a real receiver (docs/resend.md).
 */
let acme: TestOrg;
let resend: Resend;
let receiver: WebhookReceiver;

const svc = useTestService({ processes: true, env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } });
const undocumented: string[] = [];
beforeAll(async () => {
  acme = await svc.createOrg('pro');
  resend = new Resend(acme.testKey, { baseUrl: `${svc.baseUrl}/v1` });
  receiver = await startWebhookReceiver();
  vi.spyOn(console, 'error').mockImplementation(() => {});
  const checking = documentCheckingFetch(globalThis.fetch, (problem) => undocumented.push(problem));
  vi.spyOn(globalThis, 'fetch').mockImplementation(checking);
  return () => receiver.close();
});
afterAll(() => {
  vi.restoreAllMocks();
  expect(undocumented).toEqual([]);
});

describe("Resend's SDK and Postline's webhooks", () => {
  it('create with endpoint, get, list, update its status, verify a delivery, rotate the secret, remove', async () => {
    const created = await resend.webhooks.create({ endpoint: receiver.url, events: ['email.delivered'] });
    expect(created.error).toBeNull();
    const { id, signing_secret: secret } = created.data!;
    expect(secret).toMatch(/^whsec_/);
    expect((await resend.webhooks.get(id)).data).toMatchObject({ id, url: receiver.url, active: true });
    expect((await resend.webhooks.list()).data?.data.map((w) => w.id)).toContain(id);
    expect((await resend.webhooks.update(id, { status: 'disabled' })).error).toBeNull();
    expect((await resend.webhooks.get(id)).data).toMatchObject({ active: false });
    expect((await resend.webhooks.update(id, { status: 'enabled' })).error).toBeNull();

    const sent = await resend.emails.send({
      from: 'Acme <hello@acme.test>',
      to: 'delivered@simulator.postline.dev',
      subject: 'Hooked',
      text: 'hi',
    });
    await expect.poll(() => receiver.ofType('email.delivered').length, PATIENCE).toBe(1);
    const [delivery] = receiver.ofType('email.delivered');
    const verified = resend.webhooks.verify({
      payload: delivery.body,
      headers: {
        id: delivery.id,
        timestamp: String(delivery.timestamp),
        signature: delivery.signatures.join(' '),
      },
      webhookSecret: secret,
    });
    expect(verified).toMatchObject({ type: 'email.delivered', data: { email_id: sent.data!.id } });

    const rotated = await resend.webhooks.rotateSigningSecret(id);
    expect(rotated.error).toBeNull();
    expect(rotated.data?.signing_secret).toMatch(/^whsec_/);
    expect(rotated.data?.signing_secret).not.toBe(secret);
    expect((await resend.webhooks.remove(id)).error).toBeNull();
    expect((await resend.webhooks.get(id)).error).toMatchObject({ error: { code: 'not_found' } });
  });

  it('refuses both names of one field, and event types Postline does not send, naming them', async () => {
    const refused = (r: { error: unknown }, text: string) =>
      expect(r.error).toMatchObject({
        error: { code: 'validation_error', message: expect.stringContaining(text) },
      });
    const post = async (body: object) => ({ error: (await acme.test.post('/v1/webhooks', body)).body });
    refused(await post({ endpoint: receiver.url, url: receiver.url, events: ['*'] }), 'endpoint');
    refused(
      await post({ url: receiver.url, events: ['*'], active: true, status: 'enabled' }),
      '`status`: cannot be given with `active`',
    );
    refused(
      await resend.webhooks.create({ endpoint: receiver.url, events: ['email.failed'] }),
      'email.failed',
    );
  });
});
