/**
 * The one error catalogue. Every error a client can see is created here, with its HTTP status, its `type`
 * (a family) and its `code` (the exact cause). Routes and deciders throw `AppError`s; the HTTP layer maps them to
 * `{error:{type,message,code}}` (the SMTP servers, when built, will map them to reply codes). No ad-hoc error objects elsewhere.
 */
export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'conflict_error'
  | 'validation_error'
  | 'rate_limit_error'
  | 'quota_error'
  | 'api_error';

const catalogue = {
  // 400
  malformed_json: [400, 'invalid_request_error'],
  unsupported_content_type: [415, 'invalid_request_error'],
  body_too_large: [413, 'invalid_request_error'],
  invalid_header: [400, 'invalid_request_error'],
  invalid_batch: [400, 'invalid_request_error'],
  malformed_request: [400, 'invalid_request_error'],
  request_timeout: [408, 'invalid_request_error'],
  expectation_failed: [417, 'invalid_request_error'],
  headers_too_large: [431, 'invalid_request_error'],
  // 401 / 403
  missing_api_key: [401, 'authentication_error'],
  invalid_api_key: [401, 'authentication_error'],
  invalid_admin_token: [401, 'authentication_error'],
  invalid_metrics_token: [401, 'authentication_error'],
  insufficient_permission: [403, 'permission_error'],
  domain_not_allowed: [403, 'permission_error'],
  test_mode_only: [403, 'permission_error'],
  // 404 / 405
  not_found: [404, 'not_found_error'],
  route_not_found: [404, 'not_found_error'],
  method_not_allowed: [405, 'invalid_request_error'],
  content_deleted: [410, 'not_found_error'],
  // 409
  conflict: [409, 'conflict_error'],
  concurrent_modification: [409, 'conflict_error'],
  idempotency_key_reused: [409, 'conflict_error'],
  idempotency_request_in_flight: [409, 'conflict_error'],
  domain_exists: [409, 'conflict_error'],
  email_not_scheduled: [409, 'conflict_error'],
  contact_exists: [409, 'conflict_error'],
  broadcast_not_draft: [409, 'conflict_error'],
  broadcast_not_scheduled: [409, 'conflict_error'],
  webhook_inactive: [409, 'conflict_error'],
  // 422
  validation_error: [422, 'validation_error'],
  plan_limit_exceeded: [422, 'quota_error'],
  template_not_published: [422, 'validation_error'],
  template_render_error: [422, 'validation_error'],
  domain_not_verified: [422, 'validation_error'],
  all_recipients_suppressed: [422, 'validation_error'],
  // 429
  rate_limit_exceeded: [429, 'rate_limit_error'],
  monthly_quota_exceeded: [429, 'quota_error'],
  // 5xx
  internal_error: [500, 'api_error'],
  projection_timeout: [503, 'api_error'],
  service_unavailable: [503, 'api_error'],
  database_unavailable: [503, 'api_error'],
  shutting_down: [503, 'api_error'],
} as const satisfies Record<string, readonly [number, ErrorType]>;

export type ErrorCode = keyof typeof catalogue;

/** The catalogue as data, for the OpenAPI document: each code with its HTTP status and type. */
export const ERROR_CATALOGUE: Readonly<Record<ErrorCode, readonly [number, ErrorType]>> = catalogue;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: ErrorType;
  readonly headers: Record<string, string>;
  /** Fields the answer carries beside `error`: the id of what a write created before a 503, for example. */
  readonly details: Record<string, unknown>;
  constructor(
    code: ErrorCode,
    message: string,
    headers: Record<string, string> = {},
    details: Record<string, unknown> = {},
  ) {
    super(message);
    this.code = code;
    [this.status, this.type] = catalogue[code];
    this.headers = headers;
    this.details = details;
  }
  toJSON() {
    return { ...this.details, error: { type: this.type, message: this.message, code: this.code } };
  }
}

export const notFound = (what: string, id: string) => new AppError('not_found', `${what} ${id} not found`);

/**
 * The tenancy rule of every command: another organization's resource, the other mode's, or a deleted one is not
 * found for the caller (404, never 403). Returns the state, known to exist.
 */
export function visibleTo<S extends { exists: false } | Visible>(
  state: S,
  caller: { orgId: string; mode: string },
  what: string,
  id: string,
): Extract<S, { exists: true }> {
  if (!state.exists || state.deleted || state.orgId !== caller.orgId || state.mode !== caller.mode)
    throw notFound(what, id);
  return state as Extract<S, { exists: true }>;
}

interface Visible {
  exists: true;
  orgId: string;
  mode: string;
  deleted: boolean;
}
