import { beforeAll, describe, expect, it } from 'vitest';
import { WebhookFanOut } from '../../processes/webhooks/fan-out.process.ts';
import { type TestOrg, useTestService } from '../support/service.ts';
import { expectValidationErrors } from '../support/validation.ts';

let acme: TestOrg;
let other: TestOrg;
let free: TestOrg;
const URL_A = 'https://hooks.example.com/postline';

const svc = useTestService();
beforeAll(async () => {
  acme = await svc.createOrg('business');
  other = await svc.createOrg('pro');
  free = await svc.createOrg('free');
});

const create = (org: TestOrg, body: unknown = { url: URL_A, events: ['email.*'] }) =>
  org.live.post('/v1/webhooks', body);

describe('webhooks API', () => {
  it('creates a webhook and shows its signing secret only once', async () => {
    const created = await create(acme, { url: URL_A, events: ['email.bounced', 'domain.verified'] });
    expect(created.status).toBe(201);
    expect(created.body.id).toMatch(/^wh_/);
    expect(created.body.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created.body).toMatchObject({
      url: URL_A,
      events: ['email.bounced', 'domain.verified'],
      active: true,
      disabled_reason: null,
      consecutive_failures: 0,
      total_failures: 0,
      last_success_at: null,
    });
    expect(created.body.created_at).toEqual(created.body.updated_at);
    const one = await acme.live.get(`/v1/webhooks/${created.body.id}`);
    expect(one.status).toBe(200);
    expect(one.body.signing_secret).toBeUndefined();
    const { signing_secret: _, ...shown } = created.body;
    expect(one.body).toEqual(shown);
    const list = await acme.live.get('/v1/webhooks');
    expect(list.body.data.map((w: any) => w.id)).toContain(created.body.id);
    expect(JSON.stringify(list.body)).not.toContain(created.body.signing_secret);
    expect(list.body.has_more).toBe(false);
  });

  it('stores the secret sealed: never in clear in the log or the read model', async () => {
    const created = await create(acme);
    const events = await svc.postline.services.store.readStream(`webhook-${created.body.id}`);
    expect(JSON.stringify(events)).not.toContain(created.body.signing_secret.slice(6));
    expect(
      svc.postline.services.secrets.open((events[0].data as { sealedSecret: string }).sealedSecret),
    ).toBe(created.body.signing_secret);
    const { rows } = await svc.postline.services.db.query('SELECT * FROM webhooks WHERE id = $1', [
      created.body.id,
    ]);
    expect(JSON.stringify(rows)).not.toContain(created.body.signing_secret.slice(6));
  });

  it('accepts every type of the spec, email.* and *, and de-duplicates', async () => {
    const all = [
      'email.sent',
      'email.delivered',
      'email.delivery_delayed',
      'email.bounced',
      'email.complained',
      'email.opened',
      'email.clicked',
      'email.canceled',
      'email.received',
      'contact.created',
      'contact.updated',
      'contact.deleted',
      'contact.unsubscribed',
      'domain.verified',
      'domain.dns_changed',
      'email.*',
      '*',
      '*',
    ];
    const r = await create(acme, { url: URL_A, events: all, active: false });
    expect(r.status).toBe(201);
    expect(r.body.events).toHaveLength(all.length - 1);
    expect(r.body.active).toBe(false);
  });

  it('validates the body, naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ events: ['*'] }, 'url'],
      [{ url: 'not a url', events: ['*'] }, 'url'],
      [{ url: '/relative', events: ['*'] }, 'url'],
      [{ url: 'ftp://example.com/x', events: ['*'] }, 'url'],
      [{ url: 'https://user:pw@example.com/', events: ['*'] }, 'url'],
      [{ url: URL_A }, 'events'],
      [{ url: URL_A, events: [] }, 'events'],
      [{ url: URL_A, events: ['email.sent', 'email.exploded'] }, 'email.exploded'],
      [{ url: URL_A, events: ['contact.*'] }, 'events[0]'],
      [{ url: URL_A, events: 'email.sent' }, 'events'],
      [{ url: URL_A, events: ['*'], active: 'yes' }, 'active'],
      [{ url: URL_A, events: ['*'], secret: 'mine' }, 'secret'],
      [[1, 2], 'body'],
    ];
    await expectValidationErrors((body) => create(acme, body), cases);
  });

  it('answers malformed JSON with 400 and a non-JSON body with 415', async () => {
    const bad = await acme.live.post('/v1/webhooks', '{"url": ');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('malformed_json');
    const text = await acme.live.post('/v1/webhooks', 'url=x', { 'content-type': 'text/plain' });
    expect(text.status).toBe(415);
  });

  it('holds a Free plan to one endpoint per mode', async () => {
    const first = await create(free);
    expect(first.status).toBe(201);
    const second = await create(free);
    expect(second.status).toBe(422);
    expect(second.body.error).toMatchObject({ code: 'plan_limit_exceeded', type: 'quota_error' });
    expect((await free.test.post('/v1/webhooks', { url: URL_A, events: ['*'] })).status).toBe(201);
    expect((await free.live.delete(`/v1/webhooks/${first.body.id}`)).status).toBe(200);
    expect((await create(free)).status).toBe(201);
  });

  it('updates url, events and active', async () => {
    const created = await create(acme);
    const r = await acme.live.patch(`/v1/webhooks/${created.body.id}`, {
      url: 'https://other.example.com/in',
      events: ['domain.dns_changed'],
      active: false,
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      url: 'https://other.example.com/in',
      events: ['domain.dns_changed'],
      active: false,
    });
    expect(r.body.signing_secret).toBeUndefined();
    const same = await acme.live.patch(`/v1/webhooks/${created.body.id}`, {});
    expect(same.status).toBe(200);
    expect(same.body.updated_at).toBe(r.body.updated_at);
    const bad = await acme.live.patch(`/v1/webhooks/${created.body.id}`, { events: ['nope'] });
    expect(bad.status).toBe(422);
    expect(bad.body.error.message).toContain('nope');
    expect((await acme.live.patch(`/v1/webhooks/${created.body.id}`, { signing_secret: 'x' })).status).toBe(
      422,
    );
  });

  it('deletes a webhook', async () => {
    const created = await create(acme);
    const del = await acme.live.delete(`/v1/webhooks/${created.body.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: created.body.id, deleted: true });
    expect((await acme.live.get(`/v1/webhooks/${created.body.id}`)).status).toBe(404);
    expect((await acme.live.delete(`/v1/webhooks/${created.body.id}`)).status).toBe(404);
    expect((await acme.live.patch(`/v1/webhooks/${created.body.id}`, { active: true })).status).toBe(404);
    const list = await acme.live.get('/v1/webhooks');
    expect(list.body.data.map((w: any) => w.id)).not.toContain(created.body.id);
  });

  it('rotates the secret, showing the new one once and when the old one stops signing', async () => {
    const created = await create(acme);
    const r = await acme.live.post(`/v1/webhooks/${created.body.id}/rotate-secret`);
    expect(r.status).toBe(200);
    expect(r.body.signing_secret).toMatch(/^whsec_/);
    expect(r.body.signing_secret).not.toBe(created.body.signing_secret);
    const now = svc.postline.services.clock.now().getTime();
    expect(Date.parse(r.body.previous_secret_expires_at) - now).toBeGreaterThan(23.9 * 3600_000);
    expect(Date.parse(r.body.previous_secret_expires_at) - now).toBeLessThanOrEqual(24 * 3600_000);
    const after = await acme.live.get(`/v1/webhooks/${created.body.id}`);
    expect(after.body.secret_rotated_at).not.toBeNull();
    expect(JSON.stringify(after.body)).not.toContain(r.body.signing_secret);
  });

  it('rotates with a shorter overlap when told, and refuses one it cannot keep, rotating nothing', async () => {
    const created = await create(acme);
    const id = created.body.id;
    for (const wrong of [-1, 86_401, 1.5, '60', null]) {
      const bad = await acme.live.post(`/v1/webhooks/${id}/rotate-secret`, {
        previous_secret_expires_in: wrong,
      });
      expect(bad.status, String(wrong)).toBe(422);
      expect(bad.body.error.type).toBe('validation_error');
      expect(bad.body.error.message).toContain('previous_secret_expires_in');
    }
    const unknown = await acme.live.post(`/v1/webhooks/${id}/rotate-secret`, { overlap: 0 });
    expect(unknown.status).toBe(422);
    expect((await acme.live.get(`/v1/webhooks/${id}`)).body.secret_rotated_at).toBeNull();

    const r = await acme.live.post(`/v1/webhooks/${id}/rotate-secret`, { previous_secret_expires_in: 600 });
    expect(r.status).toBe(200);
    const now = svc.postline.services.clock.now().getTime();
    expect(Date.parse(r.body.previous_secret_expires_at) - now).toBeGreaterThan(590_000);
    expect(Date.parse(r.body.previous_secret_expires_at) - now).toBeLessThanOrEqual(600_000);
  });

  it("answers 404 for unknown, malformed and other organizations' ids, on every route", async () => {
    const mine = await create(acme);
    const ids = [mine.body.id, 'wh_00000000000000000000000000', 'nope'];
    for (const id of ids) {
      const calls = [
        other.live.get(`/v1/webhooks/${id}`),
        other.live.patch(`/v1/webhooks/${id}`, { active: false }),
        other.live.delete(`/v1/webhooks/${id}`),
        other.live.post(`/v1/webhooks/${id}/rotate-secret`),
        other.live.get(`/v1/webhooks/${id}/deliveries`),
        other.live.post(`/v1/webhooks/${id}/deliveries/whl_00000000000000000000000000/retry`),
        other.live.post(`/v1/webhooks/${id}/replay`, { since: '2026-01-01T00:00:00Z' }),
      ];
      for (const r of await Promise.all(calls)) {
        expect(r.status, id).toBe(404);
        expect(r.body.error.type).toBe('not_found_error');
      }
    }
    expect((await acme.live.get(`/v1/webhooks/${mine.body.id}`)).status).toBe(200);
  });

  it('keeps test and live apart', async () => {
    const live = await create(acme);
    const test = await acme.test.post('/v1/webhooks', { url: URL_A, events: ['*'] });
    expect(test.status).toBe(201);
    const testList = await acme.test.get('/v1/webhooks');
    expect(testList.body.data.map((w: any) => w.id)).toContain(test.body.id);
    expect(testList.body.data.map((w: any) => w.id)).not.toContain(live.body.id);
    expect((await acme.test.get(`/v1/webhooks/${live.body.id}`)).status).toBe(404);
    expect((await acme.test.delete(`/v1/webhooks/${live.body.id}`)).status).toBe(404);
    expect((await acme.live.get(`/v1/webhooks/${test.body.id}`)).status).toBe(404);
  });

  it('lists the delivery log, starting with the test event', async () => {
    const created = await create(acme);
    await new WebhookFanOut(svc.postline.services).runOnce();
    const log = await acme.live.get(`/v1/webhooks/${created.body.id}/deliveries`);
    expect(log.status).toBe(200);
    expect(log.body.data).toHaveLength(1);
    expect(log.body.data[0]).toMatchObject({
      event_type: 'webhook.test',
      status: 'pending',
      attempts: [],
      webhook_id: created.body.id,
    });
    expect(log.body.data[0].id).toMatch(/^whl_/);
    expect(log.body.data[0].payload).toMatchObject({
      type: 'webhook.test',
      id: log.body.data[0].id,
      data: { webhook_id: created.body.id },
    });
    const filtered = await acme.live.get(`/v1/webhooks/${created.body.id}/deliveries?status=succeeded`);
    expect(filtered.body.data).toEqual([]);
    const bad = await acme.live.get(`/v1/webhooks/${created.body.id}/deliveries?status=lost`);
    expect(bad.status).toBe(422);
    expect(bad.body.error.message).toContain('status');
    const limit = await acme.live.get(`/v1/webhooks/${created.body.id}/deliveries?limit=0`);
    expect(limit.status).toBe(422);

    const retry = await acme.live.post(
      `/v1/webhooks/${created.body.id}/deliveries/${log.body.data[0].id}/retry`,
    );
    expect(retry.status).toBe(202);
    expect(retry.body).toMatchObject({ id: log.body.data[0].id, webhook_id: created.body.id });
    const unknown = await acme.live.post(
      `/v1/webhooks/${created.body.id}/deliveries/whl_00000000000000000000000000/retry`,
    );
    expect(unknown.status).toBe(404);
    // Another webhook's delivery id is not found under this webhook.
    const second = await create(acme);
    expect(
      (await acme.live.post(`/v1/webhooks/${second.body.id}/deliveries/${log.body.data[0].id}/retry`)).status,
    ).toBe(404);
  });

  it('accepts a replay request and validates its window', async () => {
    const created = await create(acme);
    const since = new Date(Date.now() - 3600_000).toISOString();
    const r = await acme.live.post(`/v1/webhooks/${created.body.id}/replay`, { since });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({
      object: 'webhook_replay',
      webhook_id: created.body.id,
      since,
      until: null,
    });
    expect(r.body.id).toMatch(/^whr_/);
    const cases: [unknown, string][] = [
      [{}, 'since'],
      [{ since: 'yesterday' }, 'since'],
      [{ since: '2999-01-01T00:00:00Z' }, 'since'],
      [{ since, until: '2000-01-01T00:00:00Z' }, 'until'],
      [{ since: '0000-01-01T00:00:00Z' }, 'since'],
      [{ since, until: '9999-12-31T23:59:59-01:00' }, 'until'],
      [{ since, extra: true }, 'extra'],
    ];
    await expectValidationErrors(
      (body) => acme.live.post(`/v1/webhooks/${created.body.id}/replay`, body),
      cases,
    );
    const off = await create(acme, { url: URL_A, events: ['*'], active: false });
    const refused = await acme.live.post(`/v1/webhooks/${off.body.id}/replay`, { since });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('webhook_inactive');
  });

  it('lets only full_access keys manage webhooks', async () => {
    const sending = await acme.live.post('/v1/api-keys', { name: 'sender', permission: 'sending_access' });
    const r = await svc.client(sending.body.key).post('/v1/webhooks', { url: URL_A, events: ['*'] });
    expect(r.status).toBe(403);
    expect((await svc.client(sending.body.key).get('/v1/webhooks')).status).toBe(403);
  });

  it('paginates the list', async () => {
    const org = await svc.createOrg('business');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await create(org)).body.id);
    const page1 = await org.live.get('/v1/webhooks?limit=2');
    expect(page1.body.data.map((w: any) => w.id)).toEqual([ids[2], ids[1]]);
    expect(page1.body.has_more).toBe(true);
    const page2 = await org.live.get(`/v1/webhooks?limit=2&starting_after=${ids[1]}`);
    expect(page2.body.data.map((w: any) => w.id)).toEqual([ids[0]]);
    expect(page2.body.has_more).toBe(false);
  });
});

describe('webhooks API, endpoint urls', () => {
  it('stores the url without the spaces around it, and refuses one with spaces, line breaks or port 0 inside', async () => {
    const r = await create(acme, { url: `  ${URL_A}\n`, events: ['*'] });
    expect(r.status).toBe(201);
    expect(r.body.url).toBe(URL_A);
    const cases: [unknown, string][] = [
      [{ url: 'https://hooks.example.com/a\nb', events: ['*'] }, 'url'],
      [{ url: 'https://hooks.example.com/a b', events: ['*'] }, 'url'],
      [{ url: 'https://hooks.exa\tmple.com/', events: ['*'] }, 'url'],
      [{ url: 'https://hooks.example.com:0/', events: ['*'] }, 'url'],
    ];
    await expectValidationErrors((body) => create(acme, body), cases);
    const patched = await acme.live.patch(`/v1/webhooks/${r.body.id}`, {
      url: 'https://x.example.com/a\r\n',
    });
    expect([patched.status, patched.body.url]).toEqual([200, 'https://x.example.com/a']);
  });
});

describe('webhooks API, when deliveries go only to public addresses', () => {
  const guarded = useTestService({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' } });
  let org: TestOrg;
  beforeAll(async () => {
    org = await guarded.createOrg('business');
  });

  it('refuses a url whose host is an internal address or localhost, which no delivery could reach', async () => {
    const internal = [
      'http://127.0.0.1:8080/hook',
      'http://2130706433/hook',
      'https://[::1]/hook',
      'https://[::ffff:10.0.0.1]/hook',
      'http://10.1.2.3/hook',
      'http://192.168.0.10/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://localhost:3000/hook',
      'http://api.localhost/hook',
    ];
    await expectValidationErrors(
      (body) => org.live.post('/v1/webhooks', body),
      internal.map((url) => [{ url, events: ['*'] }, /`url`.*public/]),
    );
    const ok = await org.live.post('/v1/webhooks', { url: 'https://93.184.216.34/hook', events: ['*'] });
    expect(ok.status).toBe(201);
    const byName = await org.live.post('/v1/webhooks', { url: URL_A, events: ['*'] });
    expect(byName.status).toBe(201);
    const moved = await org.live.patch(`/v1/webhooks/${byName.body.id}`, { url: 'http://127.0.0.1/hook' });
    expect(moved.status).toBe(422);
    expect(moved.body.error.message).toContain('url');
  });
});
