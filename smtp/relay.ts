import { setTimeout as sleep } from 'node:timers/promises';
import type { SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { parseAddress } from '../domain/emails/addresses.ts';
import { EMAIL_LIMITS } from '../domain/emails/limits.ts';
import type { Authenticate } from '../platform/auth/auth-context.ts';
import { AuthFailureLimit } from '../platform/auth/auth-failure-limit.ts';
import { AppError } from '../platform/errors.ts';
import type { Services } from '../platform/services.ts';
import { readMessage } from './message-reader.ts';
import { answer, asReply, replyForError, SmtpReply } from './replies.ts';
import type { SmtpServers } from './smtp-server.ts';
import { submitMessage } from './submission.ts';

/** A failed AUTH is answered after this delay times the session's refusals so far, up to the cap. */
const AUTH_FAILURE_DELAY_MS = 500;
const AUTH_FAILURE_DELAY_CAP_MS = 3000;

/**
 * The SMTP relay's policy (docs/smtp.md): AUTH with an API key as the password, nothing accepted without it, and
 * each message into the path of `POST /v1/emails`. Every reply of ours comes from `replies.ts`.
 */
export function relayHooks(servers: SmtpServers, services: Services, authenticate: Authenticate) {
  const { config } = services;
  const authFailures = new AuthFailureLimit(
    services.rateLimiter,
    config.AUTH_FAILURES_PER_MINUTE,
    services.clock,
  );

  /** The session's key as it is now: a key deleted since AUTH is refused at its next message. */
  const currentAuth = async (session: SMTPServerSession) => {
    const key = servers.session(session)?.key;
    return key === undefined ? null : authenticate(key);
  };

  /** The limit's rule, as over HTTP: a valid key is accepted; failures are counted, and past the limit refused. */
  async function onAuth(password: string, method: string, session: SMTPServerSession) {
    const address = session.remoteAddress;
    try {
      const context = await authFailures.authenticate(address, password || undefined, authenticate);
      servers.session(session)!.key = password;
      return { user: context.keyId };
    } catch (error) {
      if (!(error instanceof AppError)) {
        servers.log.error({ err: error }, 'SMTP key could not be checked');
        throw new SmtpReply('authUnavailable');
      }
      // Logged without the key, nor the user name (a key pasted into the wrong field is still a key).
      servers.log.warn({ client: address, method }, 'SMTP authentication failed');
      if (error.code === 'rate_limit_exceeded') throw new SmtpReply('tooManyAuthFailures');
      const reply = servers.refuse(session, 'authFailed');
      const errors = servers.session(session)?.errors ?? 1;
      await sleep(Math.min(AUTH_FAILURE_DELAY_CAP_MS, AUTH_FAILURE_DELAY_MS * errors));
      throw reply;
    }
  }

  async function onData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const args = (session.envelope.mailFrom || undefined)?.args || undefined;
    const eightBit = String(args?.BODY ?? '').toUpperCase() === '8BITMIME';
    const read = await readMessage(stream, eightBit);
    if (stream.sizeExceeded) throw servers.refuse(session, 'messageTooBig');
    if (read.problem) throw servers.refuse(session, read.problem);
    const context = await currentAuth(session);
    if (!context) throw servers.refuse(session, 'keyDeleted');
    try {
      const accepted = await submitMessage(
        services,
        context,
        session.envelope.rcptTo.map((r) => r.address),
        read.bytes,
        {
          heloName: session.hostNameAppearsAs,
          clientAddress: session.remoteAddress,
          hostname: servers.hostname,
          secure: session.secure,
        },
      );
      return `2.0.0 Ok: queued as ${accepted.id}`;
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500)
        servers.log.error({ err: error }, 'SMTP message not accepted');
      throw servers.refuse(session, replyForError(error));
    }
  }

  return {
    onAuth(
      auth: { method: string; password?: string | null },
      session: SMTPServerSession,
      callback: (err: Error | null, response?: { user: string }) => void,
    ) {
      answer(
        onAuth(auth.password ?? '', auth.method, session),
        callback,
        servers.log,
        'SMTP authentication not checked',
      );
    },

    onMailFrom(_address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error) => void) {
      if (!session.user) return callback(servers.refuse(session, 'authRequired'));
      currentAuth(session).then(
        (context) => callback(context ? undefined : servers.refuse(session, 'keyDeleted')),
        (error) => callback(asReply(error, servers.log, 'SMTP key could not be checked')),
      );
    },

    onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error) => void) {
      if (session.envelope.rcptTo.length >= EMAIL_LIMITS.recipients)
        return callback(servers.refuse(session, 'tooManyRecipients'));
      const parsed = parseAddress(address.address);
      if ('error' in parsed) {
        return callback(
          servers.refuse(session, new SmtpReply('invalidAddress', `Invalid address: ${parsed.error}`)),
        );
      }
      callback();
    },

    onData(
      stream: SMTPServerDataStream,
      session: SMTPServerSession,
      callback: (err: Error | null, message?: string) => void,
    ) {
      answer(onData(stream, session), callback, servers.log, 'SMTP message not read');
    },
  };
}
