import { readFileSync } from 'node:fs';
import openapiTS, { astToString } from 'openapi-typescript';
import { Webhook } from 'standardwebhooks';
import { beforeAll, describe, expect, it } from 'vitest';
import { standaloneApiDocument } from '../../bin/openapi-document.ts';
import { ManualClock } from '../../platform/clock.ts';
import { type TestOrg, useTestService } from '../../test/support/service.ts';
import { createPostline, type Postline, PostlineError, WebhookVerificationError } from '../src/index.ts';

/**
 * The SDK against a real Postline: its own service, with a batch rate limit of 1/s to see a 429 retried. The
 * service's clock stands still, so two requests cannot fall into two windows of the limit; the test moves it on
 * past a 429, as the second the SDK waits for it would.
 */
const clock = new ManualClock(new Date());
const svc = useTestService({ clock, env: { RATE_LIMIT_BATCH_RPS: '1' } });
let acme: TestOrg;
let postline: Postline;
/** What the SDK sent: method, path and Idempotency-Key of every attempt. */
const sent: { method: string; path: string; key: string | null; status: number }[] = [];
const SIM = 'simulator.postline.dev';

beforeAll(async () => {
  acme = await svc.createOrg('pro');
  postline = createPostline({
    apiKey: acme.testKey,
    baseUrl: svc.baseUrl,
    fetch: async (request) => {
      const response = await fetch(request);
      if (response.status === 429) clock.advance(Number(response.headers.get('retry-after')) * 1000);
      const { pathname } = new URL(request.url);
      sent.push({
        method: request.method,
        path: pathname,
        key: request.headers.get('idempotency-key'),
        status: response.status,
      });
      return response;
    },
  });
});

describe('@postline/sdk', () => {
  it('sends an email with an Idempotency-Key of its own and reads it back, typed', async () => {
    const accepted = await postline.emails.send({
      from: 'Acme <hello@acme.test>',
      to: [`delivered@${SIM}`],
      subject: 'Hello',
      text: 'Hello from the SDK',
    });
    expect(accepted.id).toMatch(/^em_/);
    expect(sent.at(-1)).toMatchObject({ method: 'POST', path: '/v1/emails', key: expect.any(String) });
    const email = await postline.emails.get(accepted.id);
    expect(email).toMatchObject({ id: accepted.id, subject: 'Hello', to: [`delivered@${SIM}`] });
    // Counted in the figures of its day, typed.
    const day = email.created_at.slice(0, 10);
    const figures = await postline.emails.metrics({
      start_date: day,
      end_date: day,
      metrics: 'received',
      email_id: accepted.id,
    });
    expect(figures.totals).toEqual({ received: 1 });
  });

  it('imports contacts from CSV text, sent as text/csv, and reads the import back', async () => {
    const audience = await postline.client.POST('/v1/audiences', { body: { name: 'Imported' } });
    const audienceId = audience.data!.id;
    const started = await postline.contacts.import(audienceId, 'email,first_name\nada@example.com,Ada\n');
    expect(started).toMatchObject({ object: 'contact_import', audience_id: audienceId });
    expect(['queued', 'running', 'completed']).toContain(started.status);
    const job = await postline.contacts.getImport(audienceId, started.id);
    expect(job.id).toBe(started.id);
  });

  it('sends a 429 again after Retry-After, with the same Idempotency-Key', async () => {
    const item = { from: 'Acme <hello@acme.test>', to: [`delivered@${SIM}`], subject: 'B', text: 'b' };
    sent.length = 0;
    await postline.emails.batch([item]);
    const second = await postline.emails.batch([item]);
    expect(second.data).toHaveLength(1);
    const batches = sent.filter((s) => s.path === '/v1/emails/batch');
    expect(batches.map((s) => s.status)).toEqual([200, 429, 200]);
    expect(batches[1].key).toBe(batches[2].key);
    expect(batches[0].key).not.toBe(batches[1].key);
  });

  it('answers a 429 at once when its Retry-After is longer than it would wait (a monthly quota, say)', async () => {
    const impatient = createPostline({
      apiKey: acme.testKey,
      baseUrl: svc.baseUrl,
      maxRetryDelayMs: 100, // the batch limit's Retry-After is 1 s
      fetch: async (request) => {
        const response = await fetch(request);
        sent.push({
          method: request.method,
          path: new URL(request.url).pathname,
          key: null,
          status: response.status,
        });
        return response;
      },
    });
    const item = { from: 'Acme <hello@acme.test>', to: [`delivered@${SIM}`], subject: 'C', text: 'c' };
    clock.advance(1000); // a fresh window of the batch limit
    sent.length = 0;
    await impatient.emails.batch([item]);
    const refused = await impatient.emails.batch([item]).catch((e) => e);
    expect(refused).toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
    expect(sent.filter((s) => s.path === '/v1/emails/batch').map((s) => s.status)).toEqual([200, 429]);
  });

  it('throws a PostlineError carrying the code of the catalogue', async () => {
    const error = await postline.emails.get('em_unknown').catch((e) => e);
    expect(error).toBeInstanceOf(PostlineError);
    expect(error).toMatchObject({ status: 404, type: 'not_found_error', code: 'not_found' });
    const live = createPostline({ apiKey: acme.liveKey, baseUrl: svc.baseUrl });
    const refused = await live.emails
      .send({ from: 'Acme <hello@unverified.test>', to: ['ann@example.com'], subject: 'x', text: 'x' })
      .catch((e) => e);
    expect(refused).toMatchObject({ status: 422, code: 'domain_not_verified' });
  });

  it('verifies a webhook delivery signed with the endpoint secret, and refuses a tampered one', async () => {
    const hook = await postline.webhooks.create({ url: 'http://127.0.0.1:9/hook', events: ['email.sent'] });
    const payload = JSON.stringify({
      type: 'email.sent',
      id: 'whl_01',
      created_at: new Date().toISOString(),
      data: {
        email_id: 'em_1',
        from: 'a@b.test',
        to: ['c@d.test'],
        subject: 's',
        tags: [],
        timestamp: '2026-01-01T00:00:00.000Z',
      },
    });
    const at = new Date();
    const headers = {
      'webhook-id': 'whl_01',
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(hook.signing_secret).sign('whl_01', at, payload),
    };
    const event = postline.webhooks.verify(payload, headers, hook.signing_secret);
    expect(event.type).toBe('email.sent');
    if (event.type === 'email.sent') expect(event.data.email_id).toBe('em_1');
    expect(() =>
      postline.webhooks.verify(payload.replace('em_1', 'em_2'), headers, hook.signing_secret),
    ).toThrow(WebhookVerificationError);
  });

  it("keeps its types generated from the service's current document", async () => {
    const generated = astToString(await openapiTS(JSON.parse(JSON.stringify(standaloneApiDocument()))));
    const committed = readFileSync(new URL('../generated/schema.ts', import.meta.url), 'utf8');
    // Regenerate with `npm run generate` in sdk/ when this fails.
    expect(committed.replace(/^\/\*\*[\s\S]*?\*\/\s*/, '')).toBe(
      generated.replace(/^\/\*\*[\s\S]*?\*\/\s*/, ''),
    );
  });
});

/**
 * Type-level: a misspelt field does not compile (`npm run typecheck` fails if one of these is accepted). Never
 * called; the compiler reads it.
 */
export function misspeltFieldsDoNotCompile(p: Postline) {
  // @ts-expect-error `form` is not a field of a send; `from` is.
  void p.emails.send({ form: 'a@b.test', to: ['c@d.test'], subject: 's' });
  // @ts-expect-error `to` is required.
  void p.emails.send({ from: 'a@b.test', subject: 's' });
  void p.emails.get('em_1').then((email) => {
    // @ts-expect-error an Email has `subject`, not `subjet`.
    void email.subjet;
  });
}
