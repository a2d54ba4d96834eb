import { z } from 'zod';
import {
  createDocument,
  type ZodOpenApiOperationObject,
  type ZodOpenApiPathsObject,
  type ZodOpenApiResponsesObject,
} from 'zod-openapi';
import { ERROR_CATALOGUE, type ErrorCode } from '../errors.ts';
import type { Route } from './router.ts';

export const API_TITLE = 'Postline API';
export const API_VERSION = '1.0.0';

/** A public webhook event: its type (`email.sent`) and the schema of its whole payload (envelope and `data`). */
export interface WebhookPayload {
  type: string;
  summary: string;
  payload: z.ZodType;
}

/** `/domains/:domain_id` → `/v1/domains/{domain_id}`. */
export const openApiPath = (path: string) => `/v1${path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`;

const paramNames = (path: string) => [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]);

/** `GET /domains/:domain_id/verify` → `getDomainsDomainIdVerify`: stable, unique per method and path. */
const operationId = (route: Route) =>
  route.method.toLowerCase() +
  route.path
    .split(/[/:_-]/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');

/** Response headers, each a component (`#/components/headers/…`) shared by every answer that carries it. */
const header = (id: string, description: string) => z.int().min(0).meta({ description, header: { id } });
/** The same header where an answer may lack it. */
const optionalHeader = (id: string, description: string) =>
  z.int().min(0).optional().meta({ description, header: { id } });
const LIMIT = 'Requests allowed in the current window.';
const REMAINING = 'Requests left in the current window.';
const RESET = 'Seconds until the window resets.';
const rateLimitHeaders = {
  'X-RateLimit-Limit': header('X-RateLimit-Limit', LIMIT),
  'X-RateLimit-Remaining': header('X-RateLimit-Remaining', REMAINING),
  'X-RateLimit-Reset': header('X-RateLimit-Reset', RESET),
};
const retryAfter = header('Retry-After', 'Seconds to wait before sending the request again.');
/** An error may be answered before the request is counted (a malformed path, a server shutting down). */
const rateLimitHeadersIfCounted = {
  'X-RateLimit-Limit': optionalHeader('X-RateLimit-Limit-If-Counted', LIMIT),
  'X-RateLimit-Remaining': optionalHeader('X-RateLimit-Remaining-If-Counted', REMAINING),
  'X-RateLimit-Reset': optionalHeader('X-RateLimit-Reset-If-Counted', RESET),
};

/**
 * The error codes every route of a kind may answer, beside those it declares (`RouteSchema.errors`). Each rule
 * names where the code comes from, so a new plumbing error is added here once for every route.
 */
function commonErrors(route: Route): ErrorCode[] {
  const codes: ErrorCode[] = [
    // app.ts: a path that is not percent-encoded UTF-8; bearer(): the key; errorHandler: bugs, the database.
    'malformed_request',
    'missing_api_key',
    'invalid_api_key',
    'rate_limit_exceeded',
    'internal_error',
    'database_unavailable',
    'shutting_down',
    // Text the stores cannot hold in a query parameter or header (refuseUnstorableRequest), or a bad query.
    'validation_error',
  ];
  if (route.options.access !== 'send') codes.push('insufficient_permission');
  if (route.method !== 'GET' && route.method !== 'DELETE')
    codes.push('malformed_json', 'unsupported_content_type', 'body_too_large');
  if (route.method !== 'GET') codes.push('projection_timeout', 'concurrent_modification');
  // An id that is not the caller's; a path that decodes to text the stores cannot hold names nothing (app.ts).
  if (paramNames(route.path).length > 0) codes.push('not_found', 'route_not_found');
  if (route.options.idempotent)
    codes.push('invalid_header', 'idempotency_key_reused', 'idempotency_request_in_flight');
  return codes;
}

/**
 * The body of an error answer: `{error: {type, message, code}}`, the codes limited to those of the
 * catalogue with that status that this route may give. A 503 `projection_timeout` carries what the write created
 * beside `error` (`id` or `data`), hence the open outer object.
 */
function errorBody(codes: ErrorCode[]) {
  const types = [...new Set(codes.map((c) => ERROR_CATALOGUE[c][1]))];
  return z.looseObject({
    error: z.strictObject({
      type: z.enum(types as [string, ...string[]]),
      message: z.string(),
      code: z.enum(codes as [string, ...string[]]),
    }),
  });
}

function responsesOf(route: Route): ZodOpenApiResponsesObject {
  const schema = route.options.schema!;
  const responses: ZodOpenApiResponsesObject = {};
  const successHeaders = z.object({
    ...rateLimitHeaders,
    ...(route.options.idempotent && {
      'Idempotent-Replayed': z.literal('true').optional().meta({
        description:
          'Present when this is the stored answer to an earlier request with the same Idempotency-Key.',
      }),
    }),
  });
  for (const [status, body] of Object.entries(schema.responses)) {
    responses[status as '200'] = {
      description: status === '201' ? 'Created' : status === '202' ? 'Accepted' : 'OK',
      headers: successHeaders,
      content: { 'application/json': { schema: body as z.ZodType } },
    };
  }
  const codes = [...new Set([...commonErrors(route), ...(schema.errors ?? [])])];
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERROR_CATALOGUE[code][0];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const headers = z.object({
      ...rateLimitHeadersIfCounted,
      ...((status === 429 || status === 503) && { 'Retry-After': retryAfter }),
    });
    responses[String(status) as '400'] = {
      description: `Error: ${list.map((c) => `\`${c}\``).join(', ')}`,
      headers,
      content: { 'application/json': { schema: errorBody(list) } },
    };
  }
  return responses;
}

function operationOf(route: Route): ZodOpenApiOperationObject {
  const schema = route.options.schema!;
  const names = paramNames(route.path);
  const path = schema.params ?? z.object(Object.fromEntries(names.map((n) => [n, z.string()])));
  const idempotencyKey = route.options.idempotent && {
    'Idempotency-Key': z.string().min(1).max(255).optional().meta({
      description:
        'Within 24 hours the same key and body replay the first answer without acting again (docs/api.md).',
      example: 'order-1234-confirmation',
    }),
  };
  const header =
    idempotencyKey || schema.header ? z.object({ ...idempotencyKey, ...schema.header?.shape }) : null;
  return {
    operationId: operationId(route),
    summary: schema.summary,
    ...(schema.description && { description: schema.description }),
    tags: [schema.tag],
    ...(route.options.access === 'send' && {
      'x-postline-access': 'full_access or sending_access keys',
    }),
    requestParams: {
      ...(names.length > 0 && { path }),
      ...(schema.query && { query: schema.query }),
      ...(header && { header }),
    },
    ...(schema.body && {
      requestBody: {
        required: !schema.bodyOptional,
        content: { [schema.bodyType ?? 'application/json']: { schema: schema.body } },
      },
    }),
    responses: responsesOf(route),
  };
}

const webhookHeaders = z.object({
  'webhook-id': z.string().meta({ description: 'The delivery id (`whl_…`), the same on every retry.' }),
  'webhook-timestamp': z.string().meta({ description: 'Unix time in seconds of this attempt.' }),
  'webhook-signature': z.string().meta({
    description:
      'Space-separated `v1,<base64 HMAC-SHA256>` signatures of `<webhook-id>.<webhook-timestamp>.<body>` (Standard Webhooks).',
  }),
});

/**
 * The OpenAPI 3.1 document of the routes that declare a schema, with the public webhook payloads. Built once at
 * start-up from the routes' zod schemas; a route without a schema is left out (and the test on the document fails).
 */
export function openApiDocument(routes: readonly Route[], webhooks: readonly WebhookPayload[] = []) {
  const paths: ZodOpenApiPathsObject = {};
  for (const route of routes) {
    if (!route.options.schema) continue;
    const path = openApiPath(route.path);
    paths[path] ??= {};
    paths[path][route.method.toLowerCase() as 'get'] = operationOf(route);
  }
  const tags = [...new Set(routes.flatMap((r) => (r.options.schema ? [r.options.schema.tag] : [])))];
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: API_TITLE,
      version: API_VERSION,
      description:
        'Transactional email: send, schedule and track email, manage sending domains, templates, suppressions, ' +
        'contacts and webhooks. Every request needs `Authorization: Bearer <API key>`; errors are always ' +
        '`{"error": {"type", "message", "code"}}`.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/', description: 'This Postline server' }],
    security: [{ bearer: [] }],
    tags: tags.map((name) => ({ name })),
    paths,
    webhooks: Object.fromEntries(
      webhooks.map((w) => [
        w.type,
        {
          post: {
            operationId: `webhook_${w.type.replace(/[.*]/g, '_')}`,
            summary: w.summary,
            requestParams: { header: webhookHeaders },
            requestBody: { required: true, content: { 'application/json': { schema: w.payload } } },
            responses: {
              '200': { description: 'Any 2xx acknowledges the delivery; anything else is retried.' },
            },
          },
        },
      ]),
    ),
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key: `pk_live_…` sees live data, `pk_test_…` test data.',
        },
      },
    },
  });
}
