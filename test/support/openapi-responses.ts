import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { registerRoutes } from '../../bin/composition.ts';
import { standaloneApiDocument } from '../../bin/openapi-document.ts';
import { loadConfig } from '../../platform/config.ts';
import { openApiPath } from '../../platform/http/openapi.ts';
import { ApiRouter, type Route } from '../../platform/http/router.ts';
import type { Services } from '../../platform/services.ts';

/**
 * Holds every answer the integration tests receive to the document (`GET /v1/openapi.json`): the answer to a
 * /v1 route must have a status its operation lists, and a body its schema for that status accepts. A field a
 * route adds without its schema, or an error code it does not declare, fails the test that saw it.
 */
export class OpenApiResponses {
  readonly document: any;
  readonly #routes: Route[];
  readonly #ajv: Ajv2020;
  readonly #compiled = new Map<string, ValidateFunction>();

  constructor(document: any = standaloneApiDocument()) {
    this.document = document;
    const router = new ApiRouter();
    // Registering reads only the configuration; no handler runs (see standaloneApiDocument).
    registerRoutes(router, { config: loadConfig({}) } as Services);
    this.#routes = router.routes;
    this.#ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(this.#ajv);
    this.#ajv.addSchema(document, 'openapi.json');
  }

  /** What is wrong with this answer (status, required headers, body), or null when the document describes it (or it is no /v1 route's). */
  check(
    method: string,
    url: string,
    status: number,
    body: unknown,
    headers: Record<string, unknown> = {},
  ): string | null {
    const path = url.split('?')[0];
    if (!path.startsWith('/v1/')) return null;
    let route: Route | undefined;
    try {
      // The first route that matches, as express picks it (registration order).
      route = this.#routes.find((r) => r.method === method.toUpperCase() && r.matches(path.slice(3)));
    } catch {
      return null; // not percent-encoded UTF-8: answered before routing
    }
    if (!route) return null; // 404 route_not_found or 405: no operation to hold it to
    const where = `${route.method} ${openApiPath(route.path)}`;
    const operation = this.document.paths[openApiPath(route.path)]?.[route.method.toLowerCase()];
    if (!operation) return `${where} is not in the OpenAPI document`;
    if (!operation.responses[String(status)])
      return `${where} answered ${status}, which the document does not list (${Object.keys(operation.responses).join(', ')}): ${JSON.stringify(body)}`;
    const missing = Object.entries(operation.responses[String(status)].headers ?? {})
      .filter(([name, h]: [string, any]) => {
        const declared = h.$ref ? this.document.components.headers[h.$ref.split('/').pop()] : h;
        return declared.required && headers[name.toLowerCase()] === undefined;
      })
      .map(([name]) => name);
    if (missing.length > 0) return `${where} answered ${status} without the header ${missing.join(', ')}`;
    const validate = this.#validator(route, status);
    if (validate(body)) return null;
    const errors = validate.errors?.map(
      (e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`,
    );
    return `${where} answered ${status} with a body its schema refuses: ${errors?.join('; ')}\n${JSON.stringify(body).slice(0, 2000)}`;
  }

  /** What is wrong with a webhook delivery's body, or null when its type's schema (`webhooks`) accepts it. */
  checkWebhook(payload: any): string | null {
    const type = payload?.type;
    if (!this.document.webhooks?.[type])
      return `webhook type ${JSON.stringify(type)} is not in the OpenAPI document`;
    const pointer = `webhooks/${type}/post/requestBody/content/application~1json/schema`;
    let validate = this.#compiled.get(pointer);
    if (!validate) {
      validate = this.#ajv.compile({ $ref: `openapi.json#/${pointer}` });
      this.#compiled.set(pointer, validate);
    }
    if (validate(payload)) return null;
    const errors = validate.errors?.map(
      (e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`,
    );
    return `webhook ${type} refused by its schema: ${errors?.join('; ')}\n${JSON.stringify(payload).slice(0, 2000)}`;
  }

  #validator(route: Route, status: number): ValidateFunction {
    const pointer = [
      'paths',
      openApiPath(route.path),
      route.method.toLowerCase(),
      'responses',
      String(status),
      'content',
      'application/json',
      'schema',
    ]
      .map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1'))
      .join('/');
    let validate = this.#compiled.get(pointer);
    if (!validate) {
      validate = this.#ajv.compile({ $ref: `openapi.json#/${pointer}` });
      this.#compiled.set(pointer, validate);
    }
    return validate;
  }
}

let shared: OpenApiResponses | undefined;
/** One per test file (worker): the document is generated once. */
export const openApiResponses = () => {
  shared ??= new OpenApiResponses();
  return shared;
};

/**
 * A fetch that holds every answer to the document, for clients the tests do not build themselves (Resend's SDK):
 * each mismatch is handed to `mismatch` (the answer itself goes on unchanged).
 */
export function documentCheckingFetch(
  realFetch: typeof fetch,
  mismatch: (problem: string) => void,
): typeof fetch {
  return async (input, init) => {
    const response = await realFetch(input, init);
    const request = new Request(input, init);
    const text = await response.clone().text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {}
    const problem = openApiResponses().check(
      request.method,
      new URL(request.url).pathname,
      response.status,
      body,
      Object.fromEntries(response.headers),
    );
    if (problem) mismatch(problem);
    return response;
  };
}
