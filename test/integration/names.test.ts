import { beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient, ApiResponse, TestOrg } from '../support/service.ts';
import { useTestService } from '../support/service.ts';
import { expectValidationErrors } from '../support/validation.ts';

// Every name a client gives a resource follows one rule (platform/http/route-schema.ts `resourceName`).

const svc = useTestService();
let org: TestOrg;
let ids: { audience: string; topic: string; template: string; broadcast: string; domain: string };

const ok = (r: ApiResponse, status = 200) => {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
};

const impressum = { company_name: 'Acme', address: 'Street 1', country: 'DE', email: 'legal@acme.test' };
const template = { subject: 'Hi', text: 'Hi' };

beforeAll(async () => {
  org = await svc.createOrg('pro');
  const c = org.test;
  const audience = ok(await c.post('/v1/audiences', { name: 'Readers' }), 201).id;
  ids = {
    audience,
    topic: ok(await c.post('/v1/topics', { name: 'News', default_subscription: 'opt_in' }), 201).id,
    template: ok(await c.post('/v1/templates', { name: 'Welcome', ...template }), 201).id,
    broadcast: ok(
      await c.post('/v1/broadcasts', {
        name: 'September',
        audience_id: audience,
        from: 'news@acme.test',
        ...template,
      }),
      201,
    ).id,
    domain: ok(await c.post('/v1/domains', { name: 'names.acme.test' }), 201).id,
  };
});

/** Each route that takes a name: how to send it one, and the field its refusal names. */
const routes: [label: string, field: string, send: (c: ApiClient, name: string) => Promise<ApiResponse>][] = [
  ['create an API key', 'name', (c, name) => c.post('/v1/api-keys', { name, permission: 'sending_access' })],
  ['create an audience', 'name', (c, name) => c.post('/v1/audiences', { name })],
  ['rename an audience', 'name', (c, name) => c.patch(`/v1/audiences/${ids.audience}`, { name })],
  ['create a segment', 'name', (c, name) => c.post('/v1/segments', { name })],
  ['rename a segment', 'name', (c, name) => c.patch(`/v1/segments/${ids.audience}`, { name })],
  ['create a topic', 'name', (c, name) => c.post('/v1/topics', { name, default_subscription: 'opt_out' })],
  ['rename a topic', 'name', (c, name) => c.patch(`/v1/topics/${ids.topic}`, { name })],
  ['create a template', 'name', (c, name) => c.post('/v1/templates', { name, ...template })],
  ['rename a template', 'name', (c, name) => c.patch(`/v1/templates/${ids.template}`, { name })],
  ['duplicate a template', 'name', (c, name) => c.post(`/v1/templates/${ids.template}/duplicate`, { name })],
  [
    'create a broadcast',
    'name',
    (c, name) =>
      c.post('/v1/broadcasts', { name, audience_id: ids.audience, from: 'news@acme.test', ...template }),
  ],
  ['rename a broadcast', 'name', (c, name) => c.patch(`/v1/broadcasts/${ids.broadcast}`, { name })],
  [
    'set an impressum',
    'impressum.company_name',
    (c, name) => c.patch(`/v1/domains/${ids.domain}`, { impressum: { ...impressum, company_name: name } }),
  ],
];

const controls = [
  'Bell\u0007',
  'Two\nlines',
  'Carriage\rreturn',
  'Tab\there',
  'Escape\u001b[31m',
  'Del\u007f',
  'Next\u0085line',
];

describe('names', () => {
  it.each(routes)('%s: refuses control characters, naming the field', async (_, field, send) => {
    await expectValidationErrors(
      (name) => send(org.test, name as string),
      controls.map((name) => [name, `\`${field}\`: must not contain control characters`]),
    );
  });

  it.each(routes)(
    '%s: takes plain spaces and printable Unicode, without the spaces around',
    async (_, __, send) => {
      const r = await send(org.test, '  Ünïcødé naïve 日本語 🎉 — "quoted" & <b>  ');
      expect(r.status, JSON.stringify(r.body)).toBeLessThan(300);
    },
  );

  it.each(routes)('%s: keeps its other rules', async (_, field, send) => {
    await expectValidationErrors(
      (name) => send(org.test, name as string),
      [
        ['', `\`${field}\`: is required`],
        ['   ', `\`${field}\`: is required`],
        ['x'.repeat(201), `\`${field}\`: must be at most`],
      ],
    );
  });

  it('stores a name as given, without the spaces around it', async () => {
    const name = '  Ünïcødé naïve 日本語 🎉 — "quoted" & <b>\n';
    const created = ok(await org.test.post('/v1/audiences', { name }), 201);
    expect(ok(await org.test.get(`/v1/audiences/${created.id}`)).name).toBe(name.trim());
  });
});

// The impressum's optional one-line fields: printed each on a line of its own in broadcast footers.
describe.each(['representative', 'register_entry'])('the impressum’s `%s`', (field) => {
  const set = (value: unknown) =>
    org.test.patch(`/v1/domains/${ids.domain}`, { impressum: { ...impressum, [field]: value } });

  it('refuses control characters (line breaks, tabs, …), naming the field', async () => {
    await expectValidationErrors(
      set,
      controls.map((value) => [value, `\`impressum.${field}\`: must not contain control characters`]),
    );
  });

  it('keeps its other rules, and takes printable Unicode without the spaces around', async () => {
    await expectValidationErrors(set, [
      ['', `\`impressum.${field}\`: must not be empty`],
      ['x'.repeat(201), `\`impressum.${field}\`: must be at most 200 characters`],
    ]);
    const value = '  Amtsgericht Köln HRB 12345 — Jörg Müller & Co.  ';
    expect(ok(await set(value)).impressum[field]).toBe(value.trim());
  });
});
