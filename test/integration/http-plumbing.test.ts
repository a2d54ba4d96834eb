import { request } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { type TestOrg, useTestService } from '../support/service.ts';

let org: TestOrg;

const svc = useTestService();
beforeAll(async () => {
  org = await svc.createOrg('pro');
});

const expectError = (
  r: { status: number; body: any; headers: Record<string, string> },
  status: number,
  code: string,
) => {
  expect(r.status).toBe(status);
  expect(r.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(r.body)).toEqual(['error']);
  expect(Object.keys(r.body.error).sort()).toEqual(['code', 'message', 'type']);
  expect(r.body.error.code).toBe(code);
  expect(JSON.stringify(r.body)).not.toMatch(/at .*\.ts:\d+|<html/i);
};

describe('authentication', () => {
  it('401 missing_api_key without an Authorization header', async () => {
    expectError(await svc.client().get('/v1/api-keys'), 401, 'missing_api_key');
  });
  it('401 invalid_api_key for unknown, malformed and non-bearer keys', async () => {
    expectError(await svc.client('pk_live_doesnotexist').get('/v1/api-keys'), 401, 'invalid_api_key');
    expectError(await svc.client('garbage').get('/v1/api-keys'), 401, 'invalid_api_key');
    const basic = await svc.client().get('/v1/api-keys', { authorization: `Basic ${org.liveKey}` });
    expectError(basic, 401, 'invalid_api_key');
  });
  it('healthz and readyz need no key', async () => {
    expect((await svc.client().get('/healthz')).body).toEqual({ status: 'ok' });
    const ready = await svc.client().get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ready');
  });
});

describe('error shapes', () => {
  it('400 malformed_json', async () => {
    expectError(await org.live.post('/v1/api-keys', '{"name":'), 400, 'malformed_json');
  });
  it('422 for a NUL character in a string, which PostgreSQL cannot store; an escaped backslash before u0000 is fine', async () => {
    const r = await org.live.post('/v1/api-keys', '{"name":"a\\u0000b"}');
    expectError(r, 422, 'validation_error');
    expect(r.body.error.message).toMatch(/NUL/);
    const ok = await org.live.post('/v1/api-keys', '{"name":"a\\\\u0000b"}');
    expect(ok.status).toBe(201);
    expect(ok.body.name).toBe('a\\u0000b');
  });
  it('415 for a body that is not JSON', async () => {
    const r = await org.live.post('/v1/api-keys', 'name=x', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expectError(r, 415, 'unsupported_content_type');
  });
  it('413 for an oversize body', async () => {
    const r = await org.live.post('/v1/api-keys', { name: 'x'.repeat(3 * 1024 * 1024) });
    expectError(r, 413, 'body_too_large');
  });
  it('takes a send with large attachments, and a CSV import, at every path the router takes for them', async () => {
    const email = {
      from: 'Acme <hello@acme-plumbing.test>',
      to: ['delivered@simulator.postline.dev'],
      subject: 'Large',
      text: 'Attached.',
      attachments: [{ filename: 'a.bin', content: Buffer.alloc(3 * 1024 * 1024, 2).toString('base64') }],
    };
    // Routes match in any case and with a trailing slash: so does the body limit of the sending routes.
    for (const path of ['/v1/emails', '/v1/emails/', '/v1/Emails', '/V1/EMAILS/']) {
      const r = await org.test.post(path, email);
      expect([path, r.status, r.body.error?.code]).toEqual([path, 200, undefined]);
    }
    const batch = await org.test.post('/v1/Emails/Batch/', [email]);
    expect([batch.status, batch.body.error?.code]).toEqual([200, undefined]);
    expectError(
      await org.test.post('/v1/api-keys/', { name: 'x'.repeat(3 * 1024 * 1024) }),
      413,
      'body_too_large',
    );
    // A contact import's body is its CSV file, whichever way its path is written.
    const audience = (await org.live.post('/v1/audiences', { name: 'Plumbing' })).body.id;
    for (const path of [
      `/v1/audiences/${audience}/contacts/import/`,
      `/v1/Audiences/${audience}/Contacts/Import`,
    ]) {
      const r = await org.live.post(path, 'email\nann@example.org\n', { 'content-type': 'text/csv' });
      expect([path, r.status, r.body.error?.code]).toEqual([path, 202, undefined]);
    }
  });
  it('404 for an unknown route, inside and outside /v1', async () => {
    expectError(await org.live.get('/v1/nothing-here'), 404, 'route_not_found');
    expectError(await svc.client().get('/nothing'), 404, 'route_not_found');
  });
  it('405 for a wrong method, with Allow', async () => {
    const r = await org.live.request('PUT', '/v1/api-keys', { name: 'x' });
    expectError(r, 405, 'method_not_allowed');
    expect(r.headers.allow).toContain('POST');
  });
  it('422 names the field', async () => {
    const r = await org.live.post('/v1/api-keys', { name: 42 });
    expectError(r, 422, 'validation_error');
    expect(r.body.error.message).toContain('`name`');
  });
  it('409 concurrent_modification, never a 500, when many requests change one resource at once', async () => {
    const topic = await org.live.post('/v1/topics', { name: 'news', default_subscription: 'opt_in' });
    expect(topic.status).toBe(201);
    // Each change reads the topic's stream and appends at the revision it read: most of them lose the race,
    // more often than their retries cover.
    const changes = await Promise.all(
      Array.from({ length: 60 }, (_, i) => org.live.patch(`/v1/topics/${topic.body.id}`, { name: `n${i}` })),
    );
    expect(changes.some((r) => r.status === 200)).toBe(true);
    for (const r of changes.filter((c) => c.status !== 200)) expectError(r, 409, 'concurrent_modification');
  });
});

describe('pagination', () => {
  let ids: string[];
  let pager: TestOrg;
  beforeAll(async () => {
    pager = await svc.createOrg('pro');
    ids = [];
    for (let i = 0; i < 24; i++) ids.push((await pager.live.post('/v1/api-keys', { name: `k${i}` })).body.id);
    ids = [...ids, (await pager.live.get('/v1/api-keys?limit=100')).body.data.at(-1).id]; // the org's Default key is oldest
  });

  it('defaults to 20, newest first', async () => {
    const r = await pager.live.get('/v1/api-keys');
    expect(r.body.data).toHaveLength(20);
    expect(r.body.has_more).toBe(true);
    expect(r.body.data[0].id).toBe(ids[23]);
  });

  it('walks forward with starting_after and back with ending_before', async () => {
    const newestFirst = [...ids.slice(0, 24)].reverse().concat(ids[24]);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    for (;;) {
      const r = await pager.live.get(`/v1/api-keys?limit=10${cursor ? `&starting_after=${cursor}` : ''}`);
      seen.push(...r.body.data.map((k: any) => k.id));
      pages++;
      if (!r.body.has_more) break;
      cursor = r.body.data.at(-1).id;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual(newestFirst);
    const back = await pager.live.get(`/v1/api-keys?limit=5&ending_before=${newestFirst[10]}`);
    expect(back.body.data.map((k: any) => k.id)).toEqual(newestFirst.slice(5, 10));
    expect(back.body.has_more).toBe(true);
  });

  it('takes Resend’s after and before for starting_after and ending_before, not both names of one cursor', async () => {
    const newestFirst = [...ids.slice(0, 24)].reverse().concat(ids[24]);
    const page = async (q: string) =>
      (await pager.live.get(`/v1/api-keys?${q}`)).body.data.map((k: any) => k.id);
    expect(await page(`limit=5&after=${newestFirst[4]}`)).toEqual(newestFirst.slice(5, 10));
    expect(await page(`limit=5&before=${newestFirst[10]}`)).toEqual(newestFirst.slice(5, 10));
    for (const [q, message] of [
      [
        `after=${ids[1]}&starting_after=${ids[2]}`,
        '`after`: cannot be given with starting_after (it is Resend’s name for it)',
      ],
      [
        `before=${ids[1]}&ending_before=${ids[2]}`,
        '`before`: cannot be given with ending_before (it is Resend’s name for it)',
      ],
      [
        `after=${ids[1]}&before=${ids[2]}`,
        '`ending_before`: use either starting_after or ending_before, not both',
      ],
    ]) {
      const r = await pager.live.get(`/v1/api-keys?${q}`);
      expectError(r, 422, 'validation_error');
      expect(r.body.error.message).toBe(message);
    }
  });

  it('stays stable when items are inserted while paging', async () => {
    const first = await pager.live.get('/v1/api-keys?limit=5');
    await pager.live.post('/v1/api-keys', { name: 'late' });
    const second = await pager.live.get(`/v1/api-keys?limit=5&starting_after=${first.body.data.at(-1).id}`);
    const firstIds = first.body.data.map((k: any) => k.id);
    expect(second.body.data.some((k: any) => firstIds.includes(k.id))).toBe(false);
    expect(second.body.data[0].id).toBe(firstIds.length ? [...ids.slice(0, 24)].reverse()[5] : undefined);
  });

  it('rejects bad limits and cursors with 422', async () => {
    for (const q of [
      'limit=0',
      'limit=101',
      'limit=abc',
      'limit=1.5',
      'starting_after=%20',
      'starting_after=a&ending_before=b',
      'bogus=1',
    ]) {
      const r = await pager.live.get(`/v1/api-keys?${q}`);
      expectError(r, 422, 'validation_error');
    }
    // In words of the rule, not zod's ("expected number, received NaN").
    expect((await pager.live.get('/v1/api-keys?limit=abc')).body.error.message).toBe(
      '`limit`: must be an integer between 1 and 100',
    );
    expect((await pager.live.get('/v1/api-keys?limit=1')).body.data).toHaveLength(1);
    expect((await pager.live.get('/v1/api-keys?limit=100')).body.data.length).toBeGreaterThan(20);
  });
});

describe('idempotency', () => {
  const template = (name: string) => ({ name, subject: 'Hi', html: '<p>Hi</p>' });

  it('replays the first response for the same key and body without acting again', async () => {
    const headers = { 'idempotency-key': 'create-template-1' };
    const first = await org.live.post('/v1/templates', template('idem'), headers);
    const second = await org.live.post('/v1/templates', template('idem'), headers);
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers['idempotent-replayed']).toBe('true');
    const list = await org.live.get('/v1/templates?limit=100');
    expect(list.body.data.filter((t: any) => t.name === 'idem')).toHaveLength(1);
  });

  it('replays the same body with its keys in another order: JSON objects are unordered', async () => {
    const headers = { 'idempotency-key': 'create-template-reordered' };
    const body = template('reordered');
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    expect(JSON.stringify(reordered)).not.toBe(JSON.stringify(body));
    const first = await org.live.post('/v1/templates', body, headers);
    const second = await org.live.post('/v1/templates', reordered, headers);
    expect(first.status).toBe(201);
    expect(second.status, JSON.stringify(second.body)).toBe(201);
    expect(second.body).toEqual(first.body);
    expect(second.headers['idempotent-replayed']).toBe('true');
  });

  it('409 for the same key with another body', async () => {
    const headers = { 'idempotency-key': 'create-template-2' };
    expect((await org.live.post('/v1/templates', template('a'), headers)).status).toBe(201);
    expectError(await org.live.post('/v1/templates', template('b'), headers), 409, 'idempotency_key_reused');
  });

  it('replays validation errors too, and scopes keys per organization and mode', async () => {
    const headers = { 'idempotency-key': 'shared-key' };
    expectError(await org.live.post('/v1/templates', template(''), headers), 422, 'validation_error');
    expectError(await org.live.post('/v1/templates', template(''), headers), 422, 'validation_error');
    const other = await svc.createOrg();
    expect((await other.live.post('/v1/templates', template('x'), headers)).status).toBe(201);
    expect((await org.test.post('/v1/templates', template('x'), headers)).status).toBe(201);
  });

  it('400 for an unusable key', async () => {
    expectError(
      await org.live.post('/v1/templates', template('x'), { 'idempotency-key': 'x'.repeat(300) }),
      400,
      'invalid_header',
    );
  });

  it('takes 1 to 255 printable ASCII characters, spaces among them (docs/api.md), and nothing else', async () => {
    const used = async (key: string, name: string) => {
      const first = await org.live.post('/v1/templates', template(name), { 'idempotency-key': key });
      const again = await org.live.post('/v1/templates', template(name), { 'idempotency-key': key });
      return [
        first.status,
        again.status,
        again.headers['idempotent-replayed'],
        again.body.id === first.body.id,
      ];
    };
    for (const key of ['order 1234 confirmation', '~', `${'k'.repeat(126)} ${'!'.repeat(128)}`])
      expect([key, ...(await used(key, `key-${key.length}`))]).toEqual([key, 201, 201, 'true', true]);
    for (const key of ['k'.repeat(256), 'tab\tinside', 'caf\u00e9'])
      expectError(
        await org.live.post('/v1/templates', template('x'), { 'idempotency-key': key }),
        400,
        'invalid_header',
      );
  });

  it('does not apply to API key creation, whose secret must never be stored', async () => {
    const headers = { 'idempotency-key': 'api-key-1' };
    const first = await org.live.post('/v1/api-keys', { name: 'twice' }, headers);
    const second = await org.live.post('/v1/api-keys', { name: 'twice' }, headers);
    expect(second.body.key).not.toBe(first.body.key);
    const { rows } = await svc.postline.services.db.query(
      `SELECT count(*)::int AS n FROM events WHERE data::text LIKE '%' || $1 || '%'`,
      [first.body.key],
    );
    expect(rows[0].n).toBe(0);
  });
});

describe('request logs', () => {
  it('never write the key', async () => {
    const { Writable } = await import('node:stream');
    const { pino } = await import('pino');
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(chunk.toString());
        cb();
      },
    });
    const original = svc.postline.services.log;
    (svc.postline.services as any).log = pino({ level: 'info' }, sink);
    try {
      await request(`${svc.baseUrl}/v1/api-keys?secret=${org.liveKey}`, {
        headers: { authorization: `Bearer ${org.liveKey}` },
      });
      await org.live.post('/v1/api-keys', { name: 'logged' });
    } finally {
      (svc.postline.services as any).log = original;
    }
    expect(lines.join('')).toContain('"path":"/v1/api-keys"');
    expect(lines.join('')).not.toContain(org.liveKey);
    expect(lines.join('')).not.toContain(org.liveKey.slice(8));
  });
});
