import { beforeAll, describe, expect, it } from 'vitest';
import { registerRoutes } from '../../bin/composition.ts';
import { openApiDocument, openApiPath } from '../../platform/http/openapi.ts';
import { ApiRouter, ok, type Route } from '../../platform/http/router.ts';
import { OpenApiResponses } from '../support/openapi-responses.ts';
import { type TestOrg, useTestService } from '../support/service.ts';

/** The routes of `routes` that the document leaves out: every route must declare its schema. */
const undocumented = (routes: readonly Route[], document: any) =>
  routes
    .filter((r) => !document.paths[openApiPath(r.path)]?.[r.method.toLowerCase()])
    .map((r) => `${r.method} ${r.path}`);

const svc = useTestService();
let acme: TestOrg;
beforeAll(async () => {
  acme = await svc.createOrg('pro');
});

describe('GET /v1/openapi.json', () => {
  it('serves the OpenAPI 3.1 document without a key, with every route of the API in it', async () => {
    const res = await svc.client().get('/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers).toHaveProperty('x-ratelimit-remaining'); // counted as a request without a key
    expect(res.body).toMatchObject({
      openapi: '3.1.0',
      info: { title: 'Postline API', version: '1.0.0' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    });
    const router = new ApiRouter();
    registerRoutes(router, svc.postline.services);
    expect(router.routes.length).toBeGreaterThan(60);
    expect(undocumented(router.routes, res.body)).toEqual([]);
  });

  it('fails for a route registered without its schema', () => {
    const router = new ApiRouter();
    registerRoutes(router, svc.postline.services);
    router.get('/undocumented', async () => ok({}));
    expect(undocumented(router.routes, openApiDocument(router.routes))).toEqual(['GET /undocumented']);
  });

  it('lists the error codes, rate-limit headers, Idempotency-Key and the webhook payloads', async () => {
    const doc = (await svc.client().get('/v1/openapi.json')).body;
    const send = doc.paths['/v1/emails'].post;
    expect(send.parameters).toContainEqual(
      expect.objectContaining({ in: 'header', name: 'Idempotency-Key' }),
    );
    expect(Object.keys(send.responses)).toEqual(
      expect.arrayContaining(['200', '400', '401', '409', '413', '415', '422', '429', '500', '503']),
    );
    expect(send.responses['200'].headers).toHaveProperty('X-RateLimit-Remaining');
    expect(send.responses['429'].headers).toHaveProperty('Retry-After');
    expect(
      send.responses['422'].content['application/json'].schema.properties.error.properties.code.enum,
    ).toEqual(
      expect.arrayContaining(['validation_error', 'domain_not_verified', 'all_recipients_suppressed']),
    );
    expect(Object.keys(doc.webhooks)).toEqual(expect.arrayContaining(['email.sent', 'email.received']));
  });
});

describe('answers held to the document', () => {
  it('catches a field added to a response without its schema, and an undeclared error code', async () => {
    const created = await acme.test.post('/v1/suppressions', { email: 'someone@example.com' });
    expect(created.status).toBe(201);
    const responses = new OpenApiResponses((await svc.client().get('/v1/openapi.json')).body);
    const url = `/v1/suppressions`;
    expect(responses.check('POST', url, 201, created.body, created.headers)).toBeNull();
    expect(responses.check('POST', url, 201, created.body, {})).toMatch(
      /without the header X-RateLimit-Limit/,
    );
    expect(responses.check('POST', url, 201, { ...created.body, added: true }, created.headers)).toMatch(
      /must NOT have additional properties.*added/,
    );
    expect(responses.check('POST', url, 201, { ...created.body, created_at: 17 }, created.headers)).toMatch(
      /created_at must be string/,
    );
    expect(
      responses.check('GET', url, 409, {
        error: { type: 'conflict_error', message: 'x', code: 'webhook_inactive' },
      }),
    ).toMatch(/answered 409, which the document does not list/);
    expect(
      responses.check('DELETE', `${url}/sup_1`, 422, {
        error: { type: 'validation_error', message: 'x', code: 'template_render_error' },
      }),
    ).toMatch(/code must be equal to one of the allowed values/);
  });
});

describe('webhook deliveries held to the document', () => {
  it('accepts a payload as documented, and catches an undocumented field or type', () => {
    const responses = new OpenApiResponses();
    const sent = {
      type: 'email.sent',
      id: 'whl_01',
      created_at: '2026-01-15T09:30:00.000Z',
      data: {
        email_id: 'em_01',
        from: 'Acme <hello@acme.test>',
        to: ['ann@example.com'],
        subject: 'Hi',
        tags: [],
        timestamp: '2026-01-15T09:30:00.000Z',
      },
    };
    expect(responses.checkWebhook(sent)).toBeNull();
    expect(responses.checkWebhook({ ...sent, data: { ...sent.data, html: '<p>' } })).toMatch(
      /must NOT have additional properties.*html/,
    );
    expect(responses.checkWebhook({ ...sent, type: 'email.sent_twice' })).toMatch(
      /not in the OpenAPI document/,
    );
  });
});

describe('GET /docs', () => {
  it('serves the reference page and its script from Postline itself', async () => {
    const page = await svc.client().get('/docs');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toContain('/v1/openapi.json');
    expect(page.body).not.toMatch(/https?:\/\//);
    const script = await svc.client().get('/docs/standalone.js');
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toMatch(/javascript/);
  });

  it('is not taken by the dashboard served at `/`, nor is anything under /docs', async () => {
    const html = { accept: 'text/html' };
    const dashboard = await svc.client().get('/', html);
    expect(dashboard.status).toBe(200);
    expect(dashboard.headers['content-security-policy']).toBeDefined();
    const page = await svc.client().get('/docs', html);
    expect(page.body).toContain('/v1/openapi.json');
    expect(page.headers['content-security-policy']).toBeUndefined();
    const document = await svc.client().get('/v1/openapi.json', html);
    expect(document.body.openapi).toBe('3.1.0');
    const other = await svc.client().get('/docs/nothing-here', html);
    expect(other.status).toBe(404);
    expect(other.body.error.code).toBe('route_not_found');
  });
});
