import { beforeAll, describe, expect, it } from 'vitest';
import { registerRoutes } from '../../bin/composition.ts';
import { ApiRouter } from '../../platform/http/router.ts';
import { PATIENCE } from '../support/patience.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

// Every route of the API, with every kind of bad input we can think of: the answer is always a 4xx (or a 2xx)
// in the documented error shape, never a 500, an HTML page or a stack trace.
let org: TestOrg;
const routes: { method: string; path: string }[] = [];

const svc = useTestService();
beforeAll(async () => {
  org = await svc.createOrg('pro');
  const router = new ApiRouter();
  registerRoutes(router, svc.postline.services);
  routes.push(...router.routes.map((r) => ({ method: r.method, path: r.path })));
});

const LONG_ID = 'a'.repeat(300);
const ids = ['nope', 'em_00000000000000000000000000', '%00', LONG_ID, "'; drop table events; --"];
const bodies: unknown[] = [
  undefined,
  {},
  [],
  'null',
  '"text"',
  '{"a":',
  { name: 1, email: [], url: {}, to: 5, from: null, events: 'x', template_data: 'x', send_at: 'soon' },
  {
    name: 'x'.repeat(100_000),
    subject: '\u0000\r\n',
    html: '{{#if',
    email: 'a@b',
    url: 'javascript:alert(1)',
  },
  { __proto__: { polluted: true }, constructor: { prototype: { x: 1 } } },
];
const queries = [
  '',
  '?limit=abc',
  '?limit=-1&starting_after=%00',
  '?from_date=yesterday&status=zzz&reason=x',
  '?ending_before=a&starting_after=b',
];

describe('hostile input, on every route', () => {
  it('never answers 5xx, and every error has the documented shape', async () => {
    expect(routes.length).toBeGreaterThan(30);
    const failures: string[] = [];
    const statuses = new Set<number>();
    for (const route of routes) {
      for (const id of ids.slice(0, route.path.includes(':') ? ids.length : 1)) {
        const path = `/v1${route.path.replace(/:[a-z_]+/g, encodeURIComponent(id))}`;
        const variants =
          route.method === 'GET' || route.method === 'DELETE'
            ? queries.map((q) => ({ path: path + q, body: undefined as unknown }))
            : bodies.map((body) => ({ path, body }));
        for (const v of variants) {
          const r = await org.live.request(route.method, v.path, v.body);
          statuses.add(r.status);
          const label = `${route.method} ${v.path.slice(0, 80)} ${JSON.stringify(v.body)?.slice(0, 60)}`;
          if (r.status >= 500)
            failures.push(`${label} -> ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
          else if (r.status >= 400) {
            const e = r.body?.error;
            if (
              !e ||
              typeof e.type !== 'string' ||
              typeof e.code !== 'string' ||
              typeof e.message !== 'string'
            )
              failures.push(
                `${label} -> ${r.status} without the error shape: ${JSON.stringify(r.body).slice(0, 200)}`,
              );
            else if (/\bat .*\.(ts|js):\d+|<html/i.test(JSON.stringify(r.body)))
              failures.push(`${label} leaks: ${e.message}`);
            else if (e.message.includes(LONG_ID.slice(0, 100)))
              failures.push(`${label} echoes the made-up id whole: ${e.message.slice(0, 120)}…`);
          }
        }
      }
    }
    expect(failures).toEqual([]);
    // The requests reached the handlers: parsing, validation and look-ups all answered.
    expect([...statuses].sort()).toEqual(expect.arrayContaining([200, 400, 404, 422]));
    expect(Object.prototype).not.toHaveProperty('polluted');
  });
});

// Text PostgreSQL cannot store (a lone UTF-16 surrogate, NUL) in any string of any body, query or header is refused
// at the entrance with a 422 naming the field, before anything is appended: a projection would fail on it for ever.
const UNSTORABLE = ['\ud800', '\udfff', '\u0000'];
const message = (path: string) => `\`${path}\`: must not contain a lone UTF-16 surrogate or NUL`;

type Path = (string | number)[];
/** The paths of every string in `value`. */
const stringPaths = (value: unknown, at: Path = []): Path[] =>
  typeof value === 'string'
    ? [at]
    : value && typeof value === 'object'
      ? Object.entries(value).flatMap(([k, v]) =>
          stringPaths(v, [...at, Array.isArray(value) ? Number(k) : k]),
        )
      : [];
const email = {
  from: 'Acme <hello@acme.test>',
  to: ['Ann <ann@example.org>'],
  cc: ['Cat <cc@example.org>'],
  bcc: ['bcc@example.org'],
  reply_to: ['Rex <r@example.org>'],
  subject: 'Hi',
  html: '<p>Hi</p>',
  text: 'Hi',
  headers: { 'X-Campaign': 'spring' },
  tags: ['spring'],
  attachments: [{ filename: 'a.txt', content: 'aGk=', content_type: 'text/plain', content_id: 'c1' }],
};
const emailFields = stringPaths(email);
const templated = {
  from: 'Acme <hello@acme.test>',
  to: 'ann@example.org',
  template_id: 'tmpl_0',
  template_data: { name: 'Ann', order: { items: ['book'] } },
};
const template = {
  name: 'Welcome',
  subject: 'Hi {{name}}',
  html: '<p>{{name}}</p>',
  text: 'Hi {{name}}',
  variables: [{ name: 'name', type: 'string' }],
};
const impressum = { company_name: 'Acme', address: 'Street 1', country: 'DE', email: 'legal@acme.test' };

/**
 * A route, a body it would accept (or at least parse), the paths of its strings (by default every string of the
 * body) and of its object keys (if any).
 */
const poisonTable: { method: string; path: string; body: unknown; values?: Path[]; keys?: Path[] }[] = [
  { method: 'POST', path: '/v1/emails', body: email, keys: [['headers'], []] },
  {
    method: 'POST',
    path: '/v1/emails',
    body: templated,
    values: [['template_id'], ['template_data', 'name'], ['template_data', 'order', 'items', 0]],
    keys: [['template_data'], ['template_data', 'order']],
  },
  {
    method: 'POST',
    path: '/v1/emails/batch',
    body: [email, templated],
    values: [...emailFields.map((f) => [0, ...f]), [1, 'template_data', 'name']],
    keys: [
      [0, 'headers'],
      [1, 'template_data'],
    ],
  },
  { method: 'PATCH', path: '/v1/emails/em_0', body: { send_at: '2030-01-01T00:00:00Z' } },
  { method: 'POST', path: '/v1/templates', body: template, keys: [[]] },
  { method: 'PATCH', path: '/v1/templates/tmpl_0', body: template },
  { method: 'POST', path: '/v1/templates/tmpl_0/duplicate', body: { name: 'Copy' } },
  {
    method: 'POST',
    path: '/v1/templates/render',
    body: { template_id: 'tmpl_0', template_data: { name: 'Ann' } },
    keys: [['template_data']],
  },
  { method: 'POST', path: '/v1/domains', body: { name: 'acme.test', region: 'eu' } },
  { method: 'PATCH', path: '/v1/domains/dom_0', body: { impressum }, keys: [['impressum']] },
  {
    method: 'POST',
    path: '/v1/webhooks',
    body: { url: 'https://hooks.example.org/in', events: ['email.sent'] },
  },
  { method: 'PATCH', path: '/v1/webhooks/wh_0', body: { url: 'https://hooks.example.org/in' } },
  { method: 'POST', path: '/v1/webhooks/wh_0/replay', body: { since: '2026-01-01T00:00:00Z' } },
  { method: 'POST', path: '/v1/api-keys', body: { name: 'ci', permission: 'full_access' } },
  { method: 'POST', path: '/v1/suppressions', body: { email: 'x@example.org', reason: 'manual' } },
  {
    method: 'POST',
    path: '/v1/topics',
    body: { name: 'News', description: 'Monthly', default_subscription: 'opt_in' },
  },
  { method: 'POST', path: '/v1/audiences', body: { name: 'Customers' } },
  {
    method: 'POST',
    path: '/v1/contacts',
    body: { email: 'ann@example.org', first_name: 'Ann', last_name: 'Lee', properties: { plan: 'pro' } },
  },
  {
    method: 'POST',
    path: '/v1/emails/received',
    body: {
      raw: 'From: a@example.org\nSubject: hi\n\nhello',
      mail_from: 'a@example.org',
      to: ['b@acme.test'],
    },
  },
];

/** `body` with the string at `path` holding `bad`; `asKey`: with a key of the object at `path` holding it. */
function poisoned(body: unknown, path: Path, bad: string, asKey: boolean): { body: unknown; field: string } {
  const copy = structuredClone(body) as any;
  let target = copy;
  for (const p of path.slice(0, asKey ? path.length : -1)) target = target[p];
  // The message writes the character as `\uXXXX`.
  const shown = `\\u${bad.charCodeAt(0).toString(16).padStart(4, '0')}`;
  const fieldOf = (parts: Path) =>
    parts.reduce<string>((out, p) => (typeof p === 'number' ? `${out}[${p}]` : out ? `${out}.${p}` : p), '');
  if (asKey) {
    const key = `x${bad}y`;
    target[key] = 'v';
    return { body: copy, field: fieldOf([...path, `x${shown}y`]) };
  }
  const last = path[path.length - 1];
  target[last] = `${String(target[last]).slice(0, 1)}${bad}${String(target[last]).slice(1)}`;
  return { body: copy, field: fieldOf(path) };
}

describe('text the stores cannot hold', () => {
  it('is refused with 422 naming the field, in every string and key of every body; nothing is appended', async () => {
    // Committed, not visible: a read's bound can lag behind an older transaction and move on its own.
    const head = () => svc.postline.services.store.headPosition({ committed: true });
    const before = await head();
    const wrong: string[] = [];
    let n = 0;
    for (const row of poisonTable) {
      const cases = [
        ...(row.values ?? stringPaths(row.body)).map((path) => ({ path, asKey: false })),
        ...(row.keys ?? []).map((path) => ({ path, asKey: true })),
      ];
      for (const c of cases) {
        for (const bad of UNSTORABLE) {
          const { body, field } = poisoned(row.body, c.path, bad, c.asKey);
          const r = await org.test.request(row.method, row.path, body);
          n++;
          if (
            r.status !== 422 ||
            r.body?.error?.code !== 'validation_error' ||
            r.body.error.message !== message(field)
          )
            wrong.push(
              `${row.method} ${row.path} ${field} ${JSON.stringify(bad)} -> ${r.status} ${JSON.stringify(r.body)}`,
            );
        }
      }
    }
    expect(wrong).toEqual([]);
    expect(n).toBeGreaterThan(150);
    expect(await head()).toBe(before);
    // The projections keep working: a normal send right after is accepted and shown.
    const sent = await org.test.post('/v1/emails', email);
    expect(sent.status, JSON.stringify(sent.body)).toBeLessThan(300);
    expect((await org.test.get(`/v1/emails/${sent.body.id}`)).body.subject).toBe('Hi');
  });

  it('a template that indexes a string cannot split a surrogate pair into what is sent', async () => {
    const t = await org.test.post('/v1/templates', {
      name: 'Initial',
      subject: 'Hi {{name.[0]}}',
      text: 'Hi {{lookup name 1}}',
      variables: [{ name: 'name', type: 'string' }],
    });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    expect((await org.test.post(`/v1/templates/${t.body.id}/publish`)).status).toBe(200);
    const before = await svc.postline.services.store.headPosition();
    const send = { from: 'a@acme.test', to: 'b@example.org', template_id: t.body.id };
    const single = await org.test.post('/v1/emails', { ...send, template_data: { name: '\ud83d\ude00' } });
    const rendered = await org.test.post('/v1/templates/render', {
      template_id: t.body.id,
      template_data: { name: '\ud83d\ude00' },
    });
    for (const r of [single, rendered]) {
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      expect(r.body.error.code).toBe('template_render_error');
    }
    // A batch answers item by item.
    const batch = await org.test.post('/v1/emails/batch', [
      { ...send, template_data: { name: 'x\ud83d\ude00' } },
    ]);
    expect(batch.body.data[0].error.code, JSON.stringify(batch.body)).toBe('template_render_error');
    expect(batch.body.data[0].error.message).toMatch(/^`text`/);
    // Nothing of an email from this template was appended (the head alone may still move: the publish's own
    // appends, and an earlier test's, can become visible to readers only now, once an older transaction ended).
    const since = await svc.postline.services.store.readAll({ from: before });
    const fromTemplate = since.filter(
      (e) => e.type.startsWith('Email') && JSON.stringify(e.data).includes(t.body.id),
    );
    expect(fromTemplate.map((e) => e.type)).toEqual([]);
    const whole = await org.test.post('/v1/emails', { ...send, template_data: { name: 'Ann' } });
    expect(whole.status, JSON.stringify(whole.body)).toBeLessThan(300);
    // The filter above sees an email of this template: the one just sent, alone, once readers may see it (a
    // transaction of another test's database can hold the log's readers back a moment).
    const queuedFromTemplate = async () =>
      (await svc.postline.services.store.readAll({ from: before }))
        .filter((e) => e.type === 'EmailQueued' && JSON.stringify(e.data).includes(t.body.id))
        .map((e) => e.streamId);
    await expect.poll(queuedFromTemplate, PATIENCE).toEqual([`email-${whole.body.id}`]);
  });

  it('in a query parameter, or escaped in the JSON text, it is refused the same way', async () => {
    for (const [path, field] of [
      ['/v1/emails?status=sent%00', 'query.status'],
      ['/v1/api-keys?starting_after=%00&limit=1', 'query.starting_after'],
      ['/v1/domains?x%00=1', 'query.x\\u0000'],
    ]) {
      const r = await org.test.get(path);
      expect(r.status, path).toBe(422);
      expect(r.body.error.message).toBe(message(field));
    }
    const escaped = await org.test.post('/v1/api-keys', '[{"name":"a\\udc00"}]');
    expect(escaped.status).toBe(422);
    expect(escaped.body.error.message).toBe(message('[0].name'));
    // A whole surrogate pair is fine.
    const pair = await org.test.post('/v1/api-keys', { name: 'ci \ud83d\ude00' });
    expect(pair.status).toBe(201);
    expect(pair.body.name).toBe('ci \ud83d\ude00');
  });
});
