/**
 * The one error catalogue. Every error a client can see is created here, with its HTTP status, its `type`
 * (a family), its `code` (the exact cause) and the reply the SMTP relay gives for it. Routes and deciders throw
 * `AppError`s; the HTTP layer maps them to `{error:{type,message,code}}`, the SMTP relay to their reply
 * (smtp/replies.ts). No ad-hoc error objects elsewhere.
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

/**
 * An SMTP reply: its code, enhanced status code (RFC 3463) and text; a `null` text says the error's own message
 * instead, as it names the rule the message broke.
 */
export type SmtpAnswer = readonly [code: number, enhanced: string, text: string | null];

/**
 * The SMTP replies errors give. The rule of SMTP: what a retry may cure is a 4xx (the client's MTA keeps the
 * message and sends it again), and only what no retry changes is a 5xx (the message bounces). So every error HTTP
 * answers 5xx or 429, and a key still in flight, is a 4xx.
 */
export const ERROR_REPLIES = {
  refused: [550, '5.6.0', null],
  /** The relay's SIZE (smtp/replies.ts MAX_MESSAGE_BYTES): the attachments' limit of an email. */
  messageTooBig: [552, '5.3.4', 'Message too big: at most 40 MB'],
  authFailed: [535, '5.7.8', 'Authentication failed: the password must be an API key of Postline'],
  notAllowed: [550, '5.7.1', null],
  conflict: [550, '5.7.0', null],
  quotaExceeded: [451, '4.7.0', null],
  rateLimited: [451, '4.7.0', null],
  inFlight: [
    451,
    '4.3.0',
    'A message with this X-Postline-Idempotency-Key is still being processed; send it again shortly',
  ],
  unavailable: [451, '4.3.2', 'Not accepting messages at the moment; send the message again shortly'],
  storageFailure: [451, '4.3.0', 'Temporary failure: the message was not stored; send it again'],
} as const satisfies Record<string, SmtpAnswer>;

const smtp = ERROR_REPLIES;

const catalogue = {
  // 400
  malformed_json: [400, 'invalid_request_error', smtp.refused],
  unsupported_content_type: [415, 'invalid_request_error', smtp.refused],
  body_too_large: [413, 'invalid_request_error', smtp.messageTooBig],
  invalid_header: [400, 'invalid_request_error', smtp.refused],
  invalid_batch: [400, 'invalid_request_error', smtp.refused],
  malformed_request: [400, 'invalid_request_error', smtp.refused],
  request_timeout: [408, 'invalid_request_error', smtp.unavailable],
  expectation_failed: [417, 'invalid_request_error', smtp.refused],
  headers_too_large: [431, 'invalid_request_error', smtp.refused],
  // 401 / 403: permanent until someone changes the key or the domain.
  missing_api_key: [401, 'authentication_error', smtp.authFailed],
  invalid_api_key: [401, 'authentication_error', smtp.authFailed],
  invalid_admin_token: [401, 'authentication_error', smtp.authFailed],
  invalid_metrics_token: [401, 'authentication_error', smtp.authFailed],
  insufficient_permission: [403, 'permission_error', smtp.notAllowed],
  domain_not_allowed: [403, 'permission_error', smtp.notAllowed],
  test_mode_only: [403, 'permission_error', smtp.notAllowed],
  // 404 / 405
  not_found: [404, 'not_found_error', smtp.refused],
  route_not_found: [404, 'not_found_error', smtp.refused],
  method_not_allowed: [405, 'invalid_request_error', smtp.refused],
  content_deleted: [410, 'not_found_error', smtp.refused],
  // 409: permanent, except what is gone once the other request is.
  conflict: [409, 'conflict_error', smtp.conflict],
  concurrent_modification: [409, 'conflict_error', smtp.storageFailure],
  idempotency_key_reused: [409, 'conflict_error', smtp.conflict],
  idempotency_request_in_flight: [409, 'conflict_error', smtp.inFlight],
  domain_exists: [409, 'conflict_error', smtp.conflict],
  email_not_scheduled: [409, 'conflict_error', smtp.conflict],
  contact_exists: [409, 'conflict_error', smtp.conflict],
  broadcast_not_draft: [409, 'conflict_error', smtp.conflict],
  broadcast_not_scheduled: [409, 'conflict_error', smtp.conflict],
  webhook_inactive: [409, 'conflict_error', smtp.conflict],
  // 422
  validation_error: [422, 'validation_error', smtp.refused],
  plan_limit_exceeded: [422, 'quota_error', smtp.refused],
  template_not_published: [422, 'validation_error', smtp.refused],
  template_render_error: [422, 'validation_error', smtp.refused],
  domain_not_verified: [422, 'validation_error', smtp.notAllowed],
  all_recipients_suppressed: [422, 'validation_error', smtp.refused],
  all_recipients_unsubscribed: [422, 'validation_error', smtp.refused],
  // 429
  rate_limit_exceeded: [429, 'rate_limit_error', smtp.rateLimited],
  monthly_quota_exceeded: [429, 'quota_error', smtp.quotaExceeded],
  // 5xx
  internal_error: [500, 'api_error', smtp.storageFailure],
  projection_timeout: [503, 'api_error', smtp.unavailable],
  service_unavailable: [503, 'api_error', smtp.unavailable],
  database_unavailable: [503, 'api_error', smtp.storageFailure],
  shutting_down: [503, 'api_error', smtp.unavailable],
} as const satisfies Record<string, readonly [number, ErrorType, SmtpAnswer]>;

export type ErrorCode = keyof typeof catalogue;

/** The catalogue as data, for the OpenAPI document: each code with its HTTP status, type and SMTP reply. */
export const ERROR_CATALOGUE: Readonly<Record<ErrorCode, readonly [number, ErrorType, SmtpAnswer]>> =
  catalogue;

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
  /** The SMTP relay's reply for it. */
  get smtp(): SmtpAnswer {
    return catalogue[this.code][2];
  }
  toJSON() {
    return { ...this.details, error: { type: this.type, message: this.message, code: this.code } };
  }
}

/** A request's field that breaks its rule: 422 `validation_error`, the message naming the field. */
export const invalidField = (field: string, message: string) =>
  new AppError('validation_error', `\`${field}\`: ${message}`);

/** Ids are far shorter: a made-up one of thousands of characters is not echoed whole. */
const ID_SHOWN_CHARS = 64;
export const notFound = (what: string, id: string) =>
  new AppError(
    'not_found',
    `${what} ${id.length > ID_SHOWN_CHARS ? `${id.slice(0, ID_SHOWN_CHARS)}…` : id} not found`,
  );

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
  if (!isVisibleTo(state, caller)) throw notFound(what, id);
  return state;
}

/** The tenancy rule of `visibleTo`, as a test: for work that skips what the caller cannot see. */
export const isVisibleTo = <S extends { exists: false } | Visible>(
  state: S,
  caller: { orgId: string; mode: string },
): state is Extract<S, { exists: true }> =>
  state.exists && !state.deleted && state.orgId === caller.orgId && state.mode === caller.mode;

interface Visible {
  exists: true;
  orgId: string;
  mode: string;
  deleted: boolean;
}
