import { beforeAll, describe, expect, it } from 'vitest';
import { type TestOrg, useTestService, useTwoOrgs, whileProjectionsStopped } from '../support/service.ts';
import { expectValidationErrors } from '../support/validation.ts';

const { svc, orgs } = useTwoOrgs();

describe('API keys', () => {
  it('creates a key, shows it once, lists only its prefix', async () => {
    const created = await orgs.acme.live.post('/v1/api-keys', { name: 'CI' });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^pk_live_[A-Za-z0-9]{40}$/);
    expect(created.body).toMatchObject({ name: 'CI', permission: 'full_access', domain_id: null });
    const list = await orgs.acme.live.get('/v1/api-keys');
    expect(list.status).toBe(200);
    expect(list.body.object).toBe('list');
    const listed = list.body.data.find((k: any) => k.id === created.body.id);
    expect(Object.keys(listed).sort()).toEqual(
      ['created_at', 'domain_id', 'id', 'key_prefix', 'mode', 'name', 'object', 'permission'].sort(),
    );
    expect(listed.object).toBe('api_key');
    expect(listed.key_prefix).toBe(created.body.key.slice(0, 16));
    expect(JSON.stringify(list.body)).not.toContain(created.body.key);
    expect(list.body.has_more).toBe(false);
  });

  it('stores only the SHA-256 hash of a key', async () => {
    const created = await orgs.acme.live.post('/v1/api-keys', { name: 'hash check' });
    const { rows } = await svc.postline.services.db.query('SELECT key_hash FROM api_keys WHERE id = $1', [
      created.body.id,
    ]);
    const { createHash } = await import('node:crypto');
    expect(rows[0].key_hash).toBe(createHash('sha256').update(created.body.key).digest('hex'));
    const events = await svc.postline.services.store.readStream(`apikey-${created.body.id}`);
    expect(JSON.stringify(events)).not.toContain(created.body.key);
  });

  it('refuses a deleted key at once', async () => {
    const created = await orgs.acme.live.post('/v1/api-keys', { name: 'temp' });
    const temp = svc.client(created.body.key);
    expect((await temp.get('/v1/api-keys')).status).toBe(200);
    const del = await orgs.acme.live.delete(`/v1/api-keys/${created.body.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: created.body.id, deleted: true });
    const after = await temp.get('/v1/api-keys');
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe('invalid_api_key');
    expect((await orgs.acme.live.delete(`/v1/api-keys/${created.body.id}`)).status).toBe(404);
  });

  it('validates the body', async () => {
    const cases: [unknown, string][] = [
      [{}, 'name'],
      [{ name: '' }, 'name'],
      [{ name: 'x', permission: 'admin' }, 'permission'],
      [{ name: 'x', extra: 1 }, 'extra'],
      [{ name: 'x', domain_id: 'nope' }, 'domain_id'],
      [{ name: 'x', permission: 'full_access', domain_id: 'dom_123' }, 'domain_id'],
      [[1, 2], 'body'],
    ];
    await expectValidationErrors((body) => orgs.acme.live.post('/v1/api-keys', body), cases);
  });

  it("keeps organizations apart: another organization's key id is not found", async () => {
    const mine = await orgs.acme.live.post('/v1/api-keys', { name: 'mine' });
    expect((await orgs.other.live.delete(`/v1/api-keys/${mine.body.id}`)).status).toBe(404);
    const list = await orgs.other.live.get('/v1/api-keys');
    expect(list.body.data.map((k: any) => k.id)).not.toContain(mine.body.id);
  });

  it('keeps test and live apart', async () => {
    const live = await orgs.acme.live.post('/v1/api-keys', { name: 'live one' });
    const test = await orgs.acme.test.post('/v1/api-keys', { name: 'test one' });
    expect(test.body.key).toMatch(/^pk_test_/);
    const testList = await orgs.acme.test.get('/v1/api-keys');
    expect(testList.body.data.map((k: any) => k.id)).toContain(test.body.id);
    expect(testList.body.data.map((k: any) => k.id)).not.toContain(live.body.id);
    expect(testList.body.data.every((k: any) => k.mode === 'test')).toBe(true);
    expect((await orgs.acme.test.delete(`/v1/api-keys/${live.body.id}`)).status).toBe(404);
  });

  it('lets a sending_access key send only: managing keys is 403', async () => {
    const sending = await orgs.acme.live.post('/v1/api-keys', {
      name: 'sender',
      permission: 'sending_access',
    });
    expect(sending.status).toBe(201);
    const r = await svc.client(sending.body.key).get('/v1/api-keys');
    expect(r.status).toBe(403);
    expect(r.body.error).toMatchObject({ type: 'permission_error', code: 'insufficient_permission' });
  });
});

describe('API keys, when the read models lag', () => {
  const lagging = useTestService({ env: { PROJECTION_WAIT_MS: '200' } });
  let org: TestOrg;
  beforeAll(async () => {
    org = await lagging.createOrg('pro');
  });

  it('answers 503 projection_timeout carrying the key it created, shown only then, which works once they catch up', async () => {
    const created = await whileProjectionsStopped(lagging, () =>
      org.live.post('/v1/api-keys', { name: 'made while lagging' }),
    );
    expect(created.status).toBe(503);
    expect(created.body.error.code).toBe('projection_timeout');
    expect(created.body).toMatchObject({ name: 'made while lagging', permission: 'full_access' });
    expect(created.body.id).toMatch(/^key_/);
    expect(created.body.key).toMatch(/^pk_live_[A-Za-z0-9]{40}$/);
    await lagging.postline.runner.caughtUp();
    const listed = await lagging.client(created.body.key).get('/v1/api-keys?limit=100');
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((k: { id: string }) => k.id)).toContain(created.body.id);
  });
});
