import { EMAIL_LIMITS } from '../domain/emails/limits.ts';
import { MIME_LIMITS } from '../domain/received-emails/mime-shape.ts';
import { AppError, ERROR_REPLIES, type SmtpAnswer } from '../platform/errors.ts';
import type { Logger } from '../platform/logger.ts';

/** Largest message the relay accepts (advertised as SIZE), as on REST: 40 MB. */
export const MAX_MESSAGE_BYTES = EMAIL_LIMITS.attachmentBytes;

/**
 * Every protocol reply of Postline's own to an SMTP client, with its enhanced status code (RFC 3463)
 * (docs/smtp.md lists them). An error of the command path gives the reply of its entry in the error catalogue
 * (platform/errors.ts), which this one shares where a reply is both. Replies smtp-server writes itself (syntax
 * errors, AUTH before STARTTLS) are its own.
 */
export const REPLIES = {
  authRequired: [530, '5.7.0', 'Authentication required: AUTH with an API key as the password'],
  authFailed: ERROR_REPLIES.authFailed,
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
  unsupportedParameter: [555, '5.5.4', 'Unsupported MAIL FROM or RCPT TO parameter'],
  unknownReturnPath: [550, '5.1.1', 'No such return path: it names no email sent from here'],
  unknownDmarcDomain: [550, '5.1.1', 'No such DMARC report address: it names no domain here'],
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
  inFlight: ERROR_REPLIES.inFlight,
  unavailable: ERROR_REPLIES.unavailable,
  storageFailure: ERROR_REPLIES.storageFailure,
} as const satisfies Record<string, readonly [number, string, string]>;

export type ReplyName = keyof typeof REPLIES;

/** An SMTP error reply for smtp-server's callbacks: code, enhanced code and text (`detail` replaces the text). */
export class SmtpReply extends Error {
  readonly responseCode: number;
  readonly name = 'SmtpReply';

  constructor(reply: ReplyName | readonly [number, string, string], detail?: string) {
    const [code, enhanced, text] = typeof reply === 'string' ? REPLIES[reply] : reply;
    super(`${enhanced} ${detail ?? text}`);
    this.responseCode = code;
  }
}

/**
 * The reply for an error of the command path: its catalogue entry's (platform/errors.ts), saying the error's
 * message where the entry has no text of its own; anything not ours is the 451 that loses nothing.
 */
export function replyForError(error: unknown): SmtpReply {
  if (!(error instanceof AppError)) return new SmtpReply('storageFailure');
  const [code, enhanced, text]: SmtpAnswer = error.smtp;
  return new SmtpReply([code, enhanced, text ?? error.message.replace(/`/g, '')]);
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
