import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, vi } from 'vitest';
import { type Postline, type StartOptions, startPostline } from '../../bin/service.ts';
import type { Clock } from '../../platform/clock.ts';
import { loadConfig } from '../../platform/config.ts';
import type { Plan } from '../../platform/tenancy.ts';
import { createOrganization } from '../../write-side/organizations/organization.commands.ts';
import { openTestDatabase, TEST_POOL_SIZE } from './databases.ts';
import { testLogger } from './failure-logs.ts';
import { openApiResponses } from './openapi-responses.ts';
import { PATIENCE, PATIENCE_MS } from './patience.ts';

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Record<string, string>;
}

export interface ApiClient {
  request<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<ApiResponse<T>>;
  get<T = any>(path: string, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  patch<T = any>(path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  put<T = any>(path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  delete<T = any>(path: string, headers?: Record<string, string>): Promise<ApiResponse<T>>;
}

/** A tiny HTTP client for the /v1 API. `body` is sent as JSON unless it is a string (sent raw). */
export function apiClient(baseUrl: string, key?: string): ApiClient {
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const h: Record<string, string> = { ...headers };
    if (key) h.authorization = `Bearer ${key}`;
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      h['content-type'] ??= 'application/json';
    }
    const res = await request(`${baseUrl}${path}`, { method: method as any, headers: h, body: payload });
    const text = await res.body.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {}
    // Every answer is held to the OpenAPI document; a mismatch fails the test that received it.
    const mismatch = openApiResponses().check(method, path, res.statusCode, parsed, res.headers);
    if (mismatch) throw new Error(`Answer not as documented: ${mismatch}`);
    return { status: res.statusCode, body: parsed, headers: res.headers as Record<string, string> };
  };
  return {
    request: call,
    get: (p, h) => call('GET', p, undefined, h),
    post: (p, b, h) => call('POST', p, b, h),
    patch: (p, b, h) => call('PATCH', p, b, h),
    put: (p, b, h) => call('PUT', p, b, h),
    delete: (p, h) => call('DELETE', p, undefined, h),
  };
}

export interface TestOrg {
  orgId: string;
  liveKey: string;
  testKey: string;
  live: ApiClient;
  test: ApiClient;
}

export interface TestService {
  postline: Postline;
  baseUrl: string;
  /** A new organization with a live and a test key, and API clients for both. */
  createOrg(plan?: Plan): Promise<TestOrg>;
  client(key?: string): ApiClient;
  close(): Promise<void>;
}

export interface TestServiceOptions {
  clock?: Clock;
  /** Run process managers (default false: tests drive them explicitly). */
  processes?: boolean;
  /**
   * Extra environment, e.g. DNS_SERVERS. Rate limits (and the limit on failed authentications) default high
   * so tests don't trip them by accident, and PROJECTION_WAIT_MS to PATIENCE_MS.
   */
  env?: Record<string, string>;
  /** Extra non-/v1 handlers, as `serve` mounts the embedded admin endpoint. */
  mount?: StartOptions['mount'];
  /** Where the service logs (default: failure-logs.ts, its warnings shown under a failed test). */
  log?: StartOptions['log'];
}

/** Postline on its own fresh database and a free port, as `npm start` would run it. */
export async function startTestService(options: TestServiceOptions = {}): Promise<TestService> {
  const { db, url, dispose } = await openTestDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), 'postline-test-'));
  const config = loadConfig({
    PORT: '0',
    DATABASE_URL: url,
    // The projection thread's pool too: test files run side by side on one server's 100 connections.
    DATABASE_POOL_SIZE: String(TEST_POOL_SIZE),
    POSTLINE_DATA_DIR: dataDir,
    POSTLINE_SECRET_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'silent',
    RATE_LIMIT_RPS: '10000',
    RATE_LIMIT_BATCH_RPS: '10000',
    AUTH_FAILURES_PER_MINUTE: '10000',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    // A write's answer waits for its read models as long as a test waits for any condition: on a busy
    // machine the default 5 s runs out and the answer is a 503.
    PROJECTION_WAIT_MS: String(PATIENCE_MS),
    // The SMTP listeners are for the tests that ask for them (`env`): each on a free port.
    SMTP_SUBMISSION_PORT: 'off',
    SMTP_SUBMISSIONS_PORT: 'off',
    SMTP_MX_PORT: 'off',
    ...options.env,
  });
  const postline = await startPostline(config, {
    db,
    clock: options.clock,
    processes: options.processes ?? false,
    mount: options.mount,
    log: options.log ?? testLogger(),
  });
  const baseUrl = `http://127.0.0.1:${postline.port}`;
  return {
    postline,
    baseUrl,
    client: (key) => apiClient(baseUrl, key),
    async createOrg(plan = 'free') {
      const org = await createOrganization(postline.services, {
        name: `Org ${randomBytes(3).toString('hex')}`,
        plan,
      });
      // As patient as any test, whatever PROJECTION_WAIT_MS the service was given (a test of lagging read models
      // sets it short): a wait that runs out is tried again.
      await vi.waitFor(() => postline.services.readYourWrites.waitFor(['api_keys'], org.position), PATIENCE);
      return {
        ...org,
        live: apiClient(baseUrl, org.liveKey),
        test: apiClient(baseUrl, org.testKey),
      };
    },
    async close() {
      await postline.close();
      await dispose();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A test service for the file (or `describe`) it is called in: started in a `beforeAll` registered here, closed
 * in an `afterAll`. `options` may be a function, evaluated when the service starts (for values other hooks set).
 *
 *   const svc = useTestService({ clock });
 *   beforeAll(async () => { acme = await svc.createOrg('pro'); });   // runs after the service started
 */
export function useTestService(options: TestServiceOptions | (() => TestServiceOptions) = {}): TestService {
  let started: TestService | undefined;
  const service = () => {
    if (!started) throw new Error('The test service starts in beforeAll: use it in hooks and tests.');
    return started;
  };
  beforeAll(async () => {
    started = await startTestService(typeof options === 'function' ? options() : options);
  });
  afterAll(async () => {
    await started?.close();
  });
  return {
    get postline() {
      return service().postline;
    },
    get baseUrl() {
      return service().baseUrl;
    },
    createOrg: (plan) => service().createOrg(plan),
    client: (key) => service().client(key),
    // Closed by the afterAll above.
    close: async () => {},
  };
}

/**
 * A test service with two organizations, made before the tests: `acme` on Pro, whose requests the tests make, and
 * `other` on Free, whose requests must never see acme's data.
 */
export function useTwoOrgs(options: TestServiceOptions | (() => TestServiceOptions) = {}) {
  const svc = useTestService(options);
  const orgs = {} as { acme: TestOrg; other: TestOrg };
  beforeAll(async () => {
    orgs.acme = await svc.createOrg('pro');
    orgs.other = await svc.createOrg('free');
  });
  return { svc, orgs };
}

/** Runs `fn` with the service's projections stopped (its read models standing still), started again after. */
export async function whileProjectionsStopped<T>(svc: TestService, fn: () => Promise<T>): Promise<T> {
  await svc.postline.runner.stop();
  try {
    return await fn();
  } finally {
    await svc.postline.runner.start();
  }
}
