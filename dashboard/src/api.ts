// The dashboard's only way to the data: the public REST API under /v1, with the key as a Bearer token.
// The key lives in sessionStorage (this tab, until it closes or the user signs out), never in a cookie or localStorage.

import type { components } from '../../sdk/generated/schema.ts';

const KEY = 'postline.api_key';

/** An answer of the API as its OpenAPI document describes it (the SDK's generated types: `cd sdk && npm run generate`). */
export type Schema<N extends keyof components['schemas']> = components['schemas'][N];

export type Mode = 'live' | 'test';

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY);
}
export function storeKey(key: string) {
  sessionStorage.setItem(KEY, key);
}
export function clearKey() {
  sessionStorage.removeItem(KEY);
}
export function modeOf(key: string): Mode | null {
  if (key.startsWith('pk_live_')) return 'live';
  if (key.startsWith('pk_test_')) return 'test';
  return null;
}

/** An answer of the API that is not 2xx: its `{error: {type, message, code}}`, and the field the message names. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly type: string;
  /** From a message such as "`name`: is required": `name`. */
  readonly field: string | null;
  constructor(status: number, body: any) {
    const e = body?.error ?? {};
    super(e.message ?? `The request failed (HTTP ${status}).`);
    this.status = status;
    this.code = e.code ?? 'unknown';
    this.type = e.type ?? 'unknown';
    this.field = /^`([^`]+)`:/.exec(this.message)?.[1] ?? null;
  }
  get forbidden() {
    return this.status === 403 && this.code === 'insufficient_permission';
  }
}

let onUnauthorized: (error: ApiError) => void = () => {};
/** What happens when the key is refused (401): the app signs out, saying why. */
export function setUnauthorizedHandler(f: (error: ApiError) => void) {
  onUnauthorized = f;
}

export async function api<T = any>(
  method: string,
  path: string,
  body?: unknown,
  key = storedKey(),
): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`/v1${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit',
    cache: 'no-store',
  });
  const text = await res.text();
  let parsed: any;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!res.ok) {
    const error = new ApiError(res.status, parsed);
    if (res.status === 401 && key === storedKey()) onUnauthorized(error);
    throw error;
  }
  return parsed as T;
}

export const get = <T = any>(path: string) => api<T>('GET', path);
export const post = <T = any>(path: string, body?: unknown) => api<T>('POST', path, body ?? {});
export const patch = <T = any>(path: string, body: unknown) => api<T>('PATCH', path, body);
export const del = <T = any>(path: string) => api<T>('DELETE', path);

export interface List<T> {
  data: T[];
  has_more: boolean;
}

/** `?a=1&b=2` from the values that are set. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** Every page of a list, up to `maxPages` of 100 (for counts and charts). `complete` says whether it got all. */
export async function listAll<T extends { id: string }>(
  path: string,
  params: Record<string, string | undefined> = {},
  maxPages = 10,
): Promise<{ data: T[]; complete: boolean }> {
  const out: T[] = [];
  let after: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const list = await get<List<T>>(`${path}${query({ ...params, limit: 100, starting_after: after })}`);
    out.push(...list.data);
    if (!list.has_more || list.data.length === 0) return { data: out, complete: true };
    after = list.data[list.data.length - 1].id;
  }
  return { data: out, complete: false };
}
