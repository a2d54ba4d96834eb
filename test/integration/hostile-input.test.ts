import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerRoutes } from '../../bin/composition.ts';
import { ApiRouter } from '../../platform/http/router.ts';
import { startTestService, type TestOrg, type TestService } from '../support/service.ts';

// Every route of the API, with every kind of bad input we can think of: the answer is always a 4xx (or a 2xx)
// in the documented error shape, never a 500, an HTML page or a stack trace.
let svc: TestService;
let org: TestOrg;
const routes: { method: string; path: string }[] = [];

beforeAll(async () => {
  svc = await startTestService();
  org = await svc.createOrg('pro');
  const router = new ApiRouter();
  registerRoutes(router, svc.postline.services);
  routes.push(...router.routes.map((r) => ({ method: r.method, path: r.path })));
});
afterAll(() => svc?.close());

const ids = ['nope', 'em_00000000000000000000000000', '%00', 'a'.repeat(300), "'; drop table events; --"];
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
          }
        }
      }
    }
    expect(failures).toEqual([]);
    // The requests reached the handlers: parsing, validation and look-ups all answered.
    expect([...statuses].sort()).toEqual(expect.arrayContaining([200, 400, 404, 422]));
    expect(Object.prototype).not.toHaveProperty('polluted');
  }, 120_000);
});
