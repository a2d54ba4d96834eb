import fc from 'fast-check';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { mountAdmin } from '../../bin/cli/admin.ts';
import { registerRoutes } from '../../bin/composition.ts';
import { ApiRouter } from '../../platform/http/router.ts';
import { startTestService, type TestOrg, type TestService } from '../support/service.ts';

// Property: whatever arrives on any route (random method, ids, also malformed percent-encoding, query, headers,
// JSON or not, with text the stores cannot hold), the answer is never a 5xx, and every error has the shape
// {error:{type,message,code}}. The routes come from the router itself, so a new route is fuzzed without a word
// here. Seeded and bounded: the same requests every run.
const SEED = 20_261_123;
const RUNS_PER_ROUTE = 25;

// Started while the file is collected: the routes to fuzz are the service's own, one test each.
const svc: TestService = await startTestService({
  mount: (app) => mountAdmin(app, 'the-admin-token', () => svc.postline),
});
const org: TestOrg = await svc.createOrg('pro');
const routes = (() => {
  const router = new ApiRouter();
  registerRoutes(router, svc.postline.services);
  return router.routes.map((r) => ({ method: r.method, path: `/v1${r.path}` }));
})();
/** The handlers outside /v1 that take input (`/healthz` and `/readyz` take none; `/readyz` may rightly be 503). */
const OUTSIDE_V1 = [
  { method: 'GET', path: '/t/o/:token' },
  { method: 'GET', path: '/t/c/:token' },
  { method: 'GET', path: '/blobs/:key' },
  { method: 'POST', path: '/admin/cli' },
  { method: 'GET', path: '/:unknown' },
];
afterAll(() => svc?.close());

/** Every byte percent-encoded unless it is unreserved: any text (a lone surrogate becomes U+FFFD) as a URL part. */
const percentEncoded = (text: string) =>
  [...Buffer.from(text, 'utf8')]
    .map((b) =>
      /[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16)}`,
    )
    .join('');

/** Single characters, with the ones that break things more likely than chance would make them. */
const unit = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('\ud800', '\udfff', '\u0000', '"', '\\', '\r\n', '{{', '%', '/', '\ufeff'),
  },
);
const text = fc.string({ unit, maxLength: 40 });

const id = fc.oneof(
  fc.constantFrom('em_0', 'tmpl_0', 'dom_0', 'wh_0', 'key_0', 'sup_0', 'whd_0', 'att_0'),
  text.map(percentEncoded),
  fc
    .array(fc.integer({ min: 0, max: 255 }), { maxLength: 6 })
    .map((bytes) => bytes.map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')),
  fc.constantFrom('%', '%E0%A4%A', '%zz', '%ff', '%00', '%ED%A0%80', '%C0%80', '..', '%2e%2e', '%2F'),
);

const query = fc.oneof(
  fc.constant(''),
  fc
    .array(
      fc.tuple(
        fc.oneof(
          fc.constantFrom('limit', 'starting_after', 'ending_before', 'status', 'x'),
          text.map(percentEncoded),
        ),
        fc.oneof(fc.constantFrom('1', '100', '-1', 'abc', '%00', '%ff', ''), text.map(percentEncoded)),
      ),
      { maxLength: 4 },
    )
    .map((pairs) => `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}`),
);

const body = fc.oneof(
  fc.constant(undefined),
  fc.jsonValue({ stringUnit: unit, maxDepth: 4 }).map((v) => JSON.stringify(v)),
  fc
    .dictionary(
      fc.constantFrom(
        'name',
        'from',
        'to',
        'subject',
        'html',
        'url',
        'events',
        'template_data',
        'email',
        'impressum',
      ),
      fc.jsonValue({ stringUnit: unit, maxDepth: 3 }),
    )
    .map((v) => JSON.stringify(v)),
  text, // not JSON
  fc.constantFrom('{', '[1,', '{"a":1}garbage', '\u0000', 'null', '""'),
);

/** Header values an HTTP client can send (visible ASCII and spaces). */
const headerValue = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  maxLength: 30,
});
const headers = fc.record(
  {
    'content-type': fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'application/json; charset=latin1',
      'text/plain',
      'multipart/form-data',
    ),
    'idempotency-key': headerValue,
    authorization: fc.constantFrom('Bearer pk_live_unknown', 'Basic abc', 'Bearer'),
    'x-anything': headerValue,
    'x-postline-admin-token': fc.constantFrom('the-admin-token', 'wrong'),
    accept: fc.constantFrom('*/*', 'text/html', 'application/xml'),
  },
  { requiredKeys: [] },
);

const expectAnswerShape = (method: string, status: number, parsed: unknown, label: string) => {
  expect(status, label).toBeLessThan(500);
  if (status >= 400 && method !== 'HEAD') {
    const e = (parsed as { error?: Record<string, unknown> } | undefined)?.error;
    expect(Object.keys(parsed as object), label).toEqual(['error']);
    expect(typeof e?.type, label).toBe('string');
    expect(typeof e?.code, label).toBe('string');
    expect(typeof e?.message, label).toBe('string');
    expect(JSON.stringify(parsed), label).not.toMatch(/\bat .*\.(ts|js):\d+|<html/i);
  }
};

describe('fuzz: every route of the router', () => {
  it('covers the whole API', () => {
    expect(routes.length).toBeGreaterThan(30);
  });

  for (const route of [...routes, ...OUTSIDE_V1]) {
    it(`${route.method} ${route.path}: never 5xx, errors always in the error shape`, async () => {
      const method = fc.oneof(
        { weight: 4, arbitrary: fc.constant(route.method) },
        { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'HEAD', 'OPTIONS') },
      );
      const path = fc
        .tuple(fc.array(id, { minLength: 4, maxLength: 4 }), fc.oneof(fc.constant(''), fc.constant('/extra')))
        .map(([ids, tail]) => {
          let i = 0;
          return `${route.path.replace(/:[a-z_]+/g, () => ids[i++])}${tail}`;
        });
      await fc.assert(
        fc.asyncProperty(method, path, query, body, headers, fc.boolean(), async (m, p, q, b, h, withKey) => {
          const sent: Record<string, string> = { ...h };
          if (withKey) sent.authorization = `Bearer ${org.liveKey}`;
          const res = await request(`${svc.baseUrl}${p}${q}`, {
            method: m as 'GET',
            headers: sent,
            body: m === 'GET' || m === 'HEAD' ? undefined : b,
          });
          const raw = await res.body.text();
          let parsed: unknown = raw;
          try {
            parsed = raw ? JSON.parse(raw) : undefined;
          } catch {}
          const label = `${m} ${p}${q} ${JSON.stringify(h)} ${String(b).slice(0, 100)} -> ${res.statusCode} ${raw.slice(0, 200)}`;
          expectAnswerShape(m, res.statusCode, parsed, label);
        }),
        { seed: SEED, numRuns: RUNS_PER_ROUTE },
      );
    });
  }
});
