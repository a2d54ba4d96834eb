import { setTimeout as sleep } from 'node:timers/promises';
import type { SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { parseAddress } from '../domain/emails/addresses.ts';
import { EMAIL_LIMITS } from '../domain/emails/limits.ts';
import type { Authenticate } from '../platform/auth/auth-context.ts';
import { AuthFailureLimit } from '../platform/auth/auth-failure-limit.ts';
import { AppError } from '../platform/errors.ts';
import { organizationRateKey } from '../platform/http/rate-limit.ts';
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

  /**
   * The message counted once in its organization's budget of RATE_LIMIT_RPS, the counter its API requests count in
   * (docs/smtp.md); the session's key as it is now, or null when deleted (nothing counted). Past the limit, the
   * catalogue's 451 4.7.0 saying when to send it again.
   */
  async function countMessage(session: SMTPServerSession) {
    const context = await currentAuth(session);
    if (!context) return null;
    const limit = config.RATE_LIMIT_RPS;
    const now = services.clock.now().getTime();
    const d = await services.rateLimiter.hit(organizationRateKey(context.orgId), limit, now);
    if (d.allowed) return context;
    throw new AppError(
      'rate_limit_exceeded',
      `Too many messages: at most ${limit} per second for your organization, API requests included; send it again in ${Math.max(1, Math.ceil(d.resetMs / 1000))} s`,
    );
  }

  async function onData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<string> {
    const args = (session.envelope.mailFrom || undefined)?.args || undefined;
    const eightBit = String(args?.BODY ?? '').toUpperCase() === '8BITMIME';
    // The count's round trip overlaps reading the message, as the API's overlaps reading a body; a read that
    // fails first leaves it unobserved.
    const counted = countMessage(session);
    counted.catch(() => {});
    const read = await readMessage(stream, eightBit);
    let context: Awaited<typeof counted>;
    try {
      context = await counted;
    } catch (error) {
      // As over HTTP, the limit's refusal, or its counters' failure, comes before any other answer. Redis away
      // says so in the log once (RedisRateLimiter); the database away is logged as everywhere.
      if (!(error instanceof AppError)) servers.log.error({ err: error }, 'SMTP message not counted');
      throw servers.refuse(session, replyForError(error));
    }
    if (stream.sizeExceeded) throw servers.refuse(session, 'messageTooBig');
    if (read.problem) throw servers.refuse(session, read.problem);
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
