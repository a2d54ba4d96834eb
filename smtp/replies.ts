import { EMAIL_LIMITS } from '../domain/emails/limits.ts';
import { MIME_LIMITS } from '../domain/received-emails/mime-shape.ts';
import { AppError, type ErrorCode } from '../platform/errors.ts';
import type { Logger } from '../platform/logger.ts';

/** Largest message the relay accepts (advertised as SIZE), as on REST: 40 MB. */
export const MAX_MESSAGE_BYTES = EMAIL_LIMITS.attachmentBytes;

/**
 * Every reply of Postline's own to an SMTP client, with its enhanced status code (RFC 3463): one catalogue, as
 * the HTTP errors have (docs/smtp.md lists them). Replies smtp-server writes itself (syntax errors, AUTH before
 * STARTTLS) are its own.
 */
export const REPLIES = {
  authRequired: [530, '5.7.0', 'Authentication required: AUTH with an API key as the password'],
  authFailed: [535, '5.7.8', 'Authentication failed: the password must be an API key of Postline'],
  keyDeleted: [535, '5.7.8', 'The API key of this session was deleted: authenticate again'],
  authUnavailable: [
    454,
    '4.7.0',
    'Temporary authentication failure: the key could not be checked; try again shortly',
  ],
  tooManyAuthFailures: [421, '4.7.0', 'Too many failed authentications from your address; try again later'],
  tooManyConnections: [421, '4.7.0', 'Too many connections from your address; try again later'],
  tooManySessions: [421, '4.3.2', 'Too many sessions open on this server; try again later'],
  tooManyErrors: [421, '4.7.0', 'Too many errors in this session; closing'],
  idleTimeout: [421, '4.4.2', 'Timeout: no progress for too long; closing'],
  sessionTooLong: [421, '4.4.2', 'Session too long; closing'],
  invalidAddress: [501, '5.1.3', 'Invalid address'],
  unknownReturnPath: [550, '5.1.1', 'No such return path: it names no email sent from here'],
  relayDenied: [
    550,
    '5.7.1',
    'Relaying denied: this server takes mail only for its inbound domains and the return paths of emails it sent',
  ],
  tooManyRecipients: [452, '4.5.3', `Too many recipients: at most ${EMAIL_LIMITS.recipients} per message`],
  messageTooBig: [552, '5.3.4', `Message too big: at most ${MAX_MESSAGE_BYTES / 1024 / 1024} MB`],
  bareLineEnding: [554, '5.6.0', 'Bare CR or LF in the message: end every line with CRLF'],
  nulByte: [554, '5.6.0', 'NUL byte in the message'],
  tooManyParts: [554, '5.6.0', `Too many MIME parts in the message: at most ${MIME_LIMITS.parts}`],
  tooDeep: [554, '5.6.0', `MIME parts nested too deep in the message: at most ${MIME_LIMITS.depth} levels`],
  headerTooBig: [
    552,
    '5.3.4',
    `Header too big: at most ${MIME_LIMITS.headerBytes / 1024} KB per header block`,
  ],
  lineTooLong: [554, '5.6.0', 'Line longer than 998 characters in the message'],
  eightBitUndeclared: [554, '5.6.7', '8-bit data in the message without MAIL FROM BODY=8BITMIME'],
  invalidMessage: [550, '5.6.0', 'Message refused'],
  notAllowed: [550, '5.7.1', 'Not allowed'],
  conflict: [550, '5.7.0', 'Refused'],
  quotaExceeded: [
    451,
    '4.7.0',
    'Monthly quota exceeded; send the message again next month or after an upgrade',
  ],
  rateLimited: [451, '4.7.0', 'Too many messages; try again shortly'],
  inFlight: [
    451,
    '4.3.0',
    'A message with this X-Postline-Idempotency-Key is still being processed; send it again shortly',
  ],
  unavailable: [451, '4.3.2', 'Not accepting messages at the moment; send the message again shortly'],
  storageFailure: [451, '4.3.0', 'Temporary failure: the message was not stored; send it again'],
} as const satisfies Record<string, readonly [number, string, string]>;

export type ReplyName = keyof typeof REPLIES;

/** An SMTP error reply for smtp-server's callbacks: code, enhanced code and text (`detail` replaces the text). */
export class SmtpReply extends Error {
  readonly responseCode: number;
  readonly name = 'SmtpReply';

  constructor(reply: ReplyName, detail?: string) {
    const [code, enhanced, text] = REPLIES[reply];
    super(`${enhanced} ${detail ?? text}`);
    this.responseCode = code;
  }
}

/**
 * The reply for each error of the command path. The rule of SMTP: what a retry may cure is a 4xx (the client's
 * MTA keeps the message and sends it again), and only what no retry changes is a 5xx (the message bounces).
 * So every error HTTP answers 5xx or 429, and a key still in flight, is a 4xx here; a new error code must be
 * placed in this table before it compiles.
 */
export const REPLY_FOR_ERROR: Readonly<Record<ErrorCode, ReplyName>> = {
  // The request itself: permanent.
  malformed_json: 'invalidMessage',
  unsupported_content_type: 'invalidMessage',
  body_too_large: 'messageTooBig',
  invalid_header: 'invalidMessage',
  invalid_batch: 'invalidMessage',
  malformed_request: 'invalidMessage',
  expectation_failed: 'invalidMessage',
  headers_too_large: 'invalidMessage',
  validation_error: 'invalidMessage',
  template_not_published: 'invalidMessage',
  template_render_error: 'invalidMessage',
  all_recipients_suppressed: 'invalidMessage',
  plan_limit_exceeded: 'invalidMessage',
  not_found: 'invalidMessage',
  route_not_found: 'invalidMessage',
  method_not_allowed: 'invalidMessage',
  content_deleted: 'invalidMessage',
  // Who may send what: permanent until someone changes the key or the domain.
  missing_api_key: 'authFailed',
  invalid_api_key: 'authFailed',
  invalid_admin_token: 'authFailed',
  invalid_metrics_token: 'authFailed',
  insufficient_permission: 'notAllowed',
  domain_not_allowed: 'notAllowed',
  test_mode_only: 'notAllowed',
  domain_not_verified: 'notAllowed',
  // Conflicts with what exists: permanent.
  conflict: 'conflict',
  idempotency_key_reused: 'conflict',
  domain_exists: 'conflict',
  email_not_scheduled: 'conflict',
  contact_exists: 'conflict',
  broadcast_not_draft: 'conflict',
  broadcast_not_scheduled: 'conflict',
  webhook_inactive: 'conflict',
  // A retry cures these: temporary.
  idempotency_request_in_flight: 'inFlight',
  concurrent_modification: 'storageFailure',
  rate_limit_exceeded: 'rateLimited',
  monthly_quota_exceeded: 'quotaExceeded',
  request_timeout: 'unavailable',
  projection_timeout: 'unavailable',
  service_unavailable: 'unavailable',
  shutting_down: 'unavailable',
  database_unavailable: 'storageFailure',
  internal_error: 'storageFailure',
};

/** Replies that say the API's message instead of their own text: it names the rule the message broke. */
const SAYS_WHY: ReadonlySet<ReplyName> = new Set([
  'invalidMessage',
  'notAllowed',
  'conflict',
  'quotaExceeded',
  'rateLimited',
]);

/** The reply for an error of the command path (`REPLY_FOR_ERROR`); anything not ours is the 451 that loses nothing. */
export function replyForError(error: unknown): SmtpReply {
  if (!(error instanceof AppError)) return new SmtpReply('storageFailure');
  const reply = REPLY_FOR_ERROR[error.code];
  return new SmtpReply(reply, SAYS_WHY.has(reply) ? error.message.replace(/`/g, '') : undefined);
}

/** An SMTP reply as it is; anything else (a bug, the database away) logged, as the 451 that loses nothing. */
export function asReply(error: unknown, log: Logger, what: string): SmtpReply {
  if (error instanceof SmtpReply) return error;
  log.error({ err: error }, what);
  return new SmtpReply('storageFailure');
}

/** Runs a hook written as a promise for smtp-server's callback: its value, or the reply its error maps to. */
export function answer<T>(
  work: Promise<T>,
  callback: (err: Error | null, value?: T) => void,
  log: Logger,
  what: string,
): void {
  work.then(
    (value) => callback(null, value),
    (error) => callback(asReply(error, log, what)),
  );
}
