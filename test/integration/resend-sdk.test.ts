import { Resend } from 'resend';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { documentCheckingFetch } from '../support/openapi-responses.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

/**
 * Resend's own SDK (the `resend` package, pinned) pointed at Postline, as a user who arrives from Resend would
 * use it: `new Resend(key, { baseUrl })`. What works is listed in docs/resend.md; each line there has its test here.
 */
let acme: TestOrg;
let resend: Resend;
const SIM = 'simulator.postline.dev';

const svc = useTestService();
beforeAll(async () => {
  acme = await svc.createOrg('pro');
  resend = new Resend(acme.testKey, { baseUrl: `${svc.baseUrl}/v1` });
  // The SDK logs every error answer to the console; the tests read them from its results.
  vi.spyOn(console, 'error').mockImplementation(() => {});
  // What the SDK receives is held to the OpenAPI document, as apiClient's answers are.
  const checking = documentCheckingFetch(globalThis.fetch, (problem) => undocumented.push(problem));
  vi.spyOn(globalThis, 'fetch').mockImplementation(checking);
});
const undocumented: string[] = [];
afterAll(() => {
  vi.restoreAllMocks();
  expect(undocumented).toEqual([]);
});

const inAnHour = () => new Date(Date.now() + 3600_000).toISOString();

describe("Resend's SDK against Postline", () => {
  it('emails.send with html, text, reply-to, Resend-style tags, headers and a Buffer attachment; emails.get', async () => {
    const sent = await resend.emails.send({
      from: 'Acme <hello@acme.test>',
      to: [`delivered@${SIM}`],
      replyTo: 'support@acme.test',
      subject: 'Welcome',
      html: '<p>Welcome</p>',
      text: 'Welcome',
      tags: [
        { name: 'category', value: 'welcome' },
        { name: 'cohort', value: '2026' },
      ],
      headers: { 'X-Campaign': 'spring' },
      attachments: [
        { filename: 'hello.txt', content: Buffer.from('hello there'), contentType: 'text/plain' },
      ],
    });
    expect(sent.error).toBeNull();
    expect(sent.data?.id).toMatch(/^em_[0-9a-z]+$/);
    const got = await resend.emails.get(sent.data!.id);
    expect(got.error).toBeNull();
    expect(got.data).toMatchObject({
      id: sent.data!.id,
      from: 'Acme <hello@acme.test>',
      to: [`delivered@${SIM}`],
      reply_to: ['support@acme.test'],
      subject: 'Welcome',
      tags: ['category:welcome', 'cohort:2026'],
    });
    const attachments = await acme.test.get(`/v1/emails/${sent.data!.id}/attachments`);
    expect(attachments.body.data.map((a: any) => [a.filename, a.size])).toEqual([['hello.txt', 11]]);
  });

  it('batch.send', async () => {
    const batch = await resend.batch.send([
      { from: 'Acme <hello@acme.test>', to: [`delivered@${SIM}`], subject: 'One', html: '<p>1</p>' },
      { from: 'Acme <hello@acme.test>', to: [`delivered@${SIM}`], subject: 'Two', text: '2' },
    ]);
    expect(batch.error).toBeNull();
    expect(batch.data?.data.map((e) => e.id)).toEqual([
      expect.stringMatching(/^em_/),
      expect.stringMatching(/^em_/),
    ]);
  });

  it('scheduledAt, emails.update to another time, emails.cancel', async () => {
    const at = inAnHour();
    const sent = await resend.emails.send({
      from: 'Acme <hello@acme.test>',
      to: `delivered@${SIM}`,
      subject: 'Later',
      text: 'later',
      scheduledAt: at,
    });
    expect(sent.error).toBeNull();
    const id = sent.data!.id;
    expect((await resend.emails.get(id)).data).toMatchObject({ status: 'scheduled', send_at: at });
    const later = new Date(Date.parse(at) + 3600_000).toISOString();
    const updated = await resend.emails.update({ id, scheduledAt: later });
    expect(updated.error).toBeNull();
    expect((await resend.emails.get(id)).data).toMatchObject({ status: 'scheduled', send_at: later });
    const canceled = await resend.emails.cancel(id);
    expect(canceled.error).toBeNull();
    expect((await resend.emails.get(id)).data).toMatchObject({ status: 'canceled' });
  });

  it('domains.create, list, get and remove', async () => {
    const created = await resend.domains.create({ name: 'acme-resend.test' });
    expect(created.error).toBeNull();
    const id = created.data!.id;
    // Postline's statuses and fields, not Resend's (docs/resend.md).
    expect(created.data).toMatchObject({ name: 'acme-resend.test', status: 'pending' });
    expect((await resend.domains.list()).data?.data.map((d) => d.id)).toContain(id);
    expect((await resend.domains.get(id)).data).toMatchObject({ id, name: 'acme-resend.test' });
    expect((await resend.domains.remove(id)).error).toBeNull();
  });

  it('apiKeys.create, list and remove', async () => {
    const created = await resend.apiKeys.create({ name: 'ci' });
    expect(created.error).toBeNull();
    expect(created.data).toMatchObject({
      id: expect.stringMatching(/^key_/),
      // The secret is `key`, as the spec names it (Resend calls it `token`).
      key: expect.stringMatching(/^pk_test_/),
    });
    expect((await resend.apiKeys.list()).data?.data.map((k) => k.id)).toContain(created.data!.id);
    expect((await resend.apiKeys.remove(created.data!.id)).error).toBeNull();
  });

  it("gives Postline's error shape back as the SDK's error", async () => {
    const refused = await resend.emails.send({
      from: 'not an address',
      to: `delivered@${SIM}`,
      subject: 's',
      text: 't',
    });
    expect(refused.data).toBeNull();
    expect(refused.error).toMatchObject({ error: { type: 'validation_error', code: 'validation_error' } });
  });
});
