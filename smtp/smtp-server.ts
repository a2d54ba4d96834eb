import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import { smtpHostname } from '../platform/config.ts';
import type { Logger } from '../platform/logger.ts';
import type { Services } from '../platform/services.ts';
import { parametersOf, unsupportedParameter } from './parameters.ts';
import { ProgressTimer } from './progress-timer.ts';
import { MAX_MESSAGE_BYTES, type ReplyName, SmtpReply } from './replies.ts';
import { loadCertificate, watchCertificate } from './tls.ts';

type Connection = SMTPServer['connections'] extends Set<infer C> ? C : never;

/** Refused commands one session may make before it is closed with 421. */
const MAX_ERRORS_PER_SESSION = 10;
/** A reply text that starts with its enhanced status code (RFC 3463), as the catalogue's do. */
const ENHANCED_CODE = /^[245]\.\d{1,3}\.\d{1,3} /;

/** What the front servers keeps of a session while it is open. */
export interface SessionState {
  address: string;
  errors: number;
  /** Messages answered 250 in the session. */
  messages: number;
  openedAt: number;
  /** SMTP_SESSION_TIMEOUT_MS: the session's whole time. */
  timer: NodeJS.Timeout;
  /** SMTP_IDLE_TIMEOUT_MS: the session's time without progress. */
  progress: ProgressTimer;
  /** The relay: the API key the session authenticated with, looked up again before each message. */
  key?: string;
}

export interface ListenerOptions {
  /** Named in the log line each session ends with: `submission`, `submissions`, `mx`. */
  name: string;
  port: number;
  implicitTls: boolean;
  banner: string;
  /** The relay offers AUTH (PLAIN, LOGIN); the MX does not. */
  auth: boolean;
  /** Whether EHLO offers SMTPUTF8: not the relay's, whose addresses are ASCII (docs/smtp.md). */
  smtpUtf8: boolean;
  hooks: Pick<SMTPServerOptions, 'onAuth' | 'onMailFrom' | 'onRcptTo'> &
    Required<Pick<SMTPServerOptions, 'onData'>>;
}

/**
 * The SMTP front servers (docs/smtp.md): the listeners of the relay and the MX, built on smtp-server with what they
 * share: the certificate (reloaded when its files change), limits of sessions per listener and per address, the
 * time-outs (no progress, and the session's whole time), AUTH offered only once TLS is up, and a session's
 * allowance of refusals. Each listener brings its own hooks.
 */
export class SmtpServers {
  readonly hostname: string;
  readonly log: Logger;
  readonly #services: Services;
  readonly #certificate: { key: string; cert: string };
  readonly #sessions = new Map<string, SessionState>();
  readonly #perAddress = new Map<string, number>();
  readonly #servers: SMTPServer[] = [];
  readonly #stopWatching: () => void;

  private constructor(services: Services, certificate: { key: string; cert: string }) {
    this.#services = services;
    this.#certificate = certificate;
    this.hostname = smtpHostname(services.config);
    this.log = services.log.child({ component: 'smtp' });
    this.#stopWatching = watchCertificate(services.config, this.log, (c) => {
      for (const s of this.#servers) s.updateSecureContext({ key: c.key, cert: c.cert });
    });
  }

  static async open(services: Services): Promise<SmtpServers> {
    return new SmtpServers(services, await loadCertificate(services.config, services.log));
  }

  session(session: SMTPServerSession): SessionState | undefined {
    return this.#sessions.get(session.id);
  }

  /** A refusal, counted: past the session's allowance it becomes the 421 that closes it. */
  refuse(session: SMTPServerSession, reply: SmtpReply | ReplyName): SmtpReply {
    const state = this.#sessions.get(session.id);
    if (state && ++state.errors >= MAX_ERRORS_PER_SESSION) return new SmtpReply('tooManyErrors');
    return typeof reply === 'string' ? new SmtpReply(reply) : reply;
  }

  /** Starts a listener; resolves with its port. */
  async listen(options: ListenerOptions): Promise<number> {
    const { config } = this.#services;
    let server!: SMTPServer;
    let open = 0;
    const connectionOf = (id: string) => [...server.connections].find((c) => c.id === id);
    const closeSession = (id: string, reply: ReplyName) => {
      const e = new SmtpReply(reply);
      connectionOf(id)?.send(e.responseCode, e.message);
    };
    // AUTH needs TLS on the STARTTLS listener (unless SMTP_ALLOW_INSECURE_AUTH): it is offered once TLS is up.
    const authAfterTls = options.auth && !options.implicitTls && !config.SMTP_ALLOW_INSECURE_AUTH;
    const progressOf = (session: SMTPServerSession) => this.#sessions.get(session.id)?.progress;
    const parameters = parametersOf(options);
    /** A MAIL or RCPT hook behind the check of its parameters (parameters.ts). */
    const checked =
      (
        command: 'MAIL FROM' | 'RCPT TO',
        hook: SMTPServerOptions['onMailFrom'],
      ): SMTPServerOptions['onMailFrom'] =>
      (address, session, callback) => {
        const unsupported = unsupportedParameter(address, command, parameters[command]);
        if (unsupported)
          return callback(this.refuse(session, new SmtpReply('unsupportedParameter', unsupported)));
        hook ? hook(address, session, callback) : callback();
      };
    server = new SMTPServer({
      name: this.hostname,
      banner: options.banner,
      secure: options.implicitTls,
      key: this.#certificate.key,
      cert: this.#certificate.cert,
      minVersion: 'TLSv1.2',
      authMethods: ['PLAIN', 'LOGIN'],
      // MAIL before AUTH is the relay's to refuse (onMailFrom), with the catalogue's 530 5.7.0.
      authOptional: true,
      allowInsecureAuth: config.SMTP_ALLOW_INSECURE_AUTH,
      disabledCommands: [...(options.implicitTls ? ['STARTTLS'] : []), ...(options.auth ? [] : ['AUTH'])],
      size: MAX_MESSAGE_BYTES,
      hideSMTPUTF8: !options.smtpUtf8,
      // RFC 2034: every 2xx, 4xx and 5xx reply carries its enhanced status code, and EHLO says so.
      hideENHANCEDSTATUSCODES: false,
      // smtp-server's own idle timer (any byte resets it) is only a backstop: the progress timer ends a stalled
      // session first, with the catalogue's reply. It still bounds an implicit TLS handshake before the session.
      socketTimeout: 2 * config.SMTP_IDLE_TIMEOUT_MS,
      // On shutdown, new commands are answered 421 at once; a message being received gets the grace to finish.
      closeTimeout: Math.max(1, config.SHUTDOWN_GRACE_MS),
      disableReverseLookup: true,
      logger: false,
      onConnect: (session, callback) => {
        const address = session.remoteAddress;
        if (open >= config.SMTP_MAX_SESSIONS) return callback(new SmtpReply('tooManySessions'));
        const fromAddress = this.#perAddress.get(address) ?? 0;
        if (fromAddress >= config.SMTP_MAX_CONNECTIONS_PER_IP)
          return callback(new SmtpReply('tooManyConnections'));
        const connection = connectionOf(session.id);
        if (!connection) return callback(); // gone already
        open++;
        this.#perAddress.set(address, fromAddress + 1);
        const timer = setTimeout(
          () => closeSession(session.id, 'sessionTooLong'),
          config.SMTP_SESSION_TIMEOUT_MS,
        );
        timer.unref();
        const progress = new ProgressTimer(config.SMTP_IDLE_TIMEOUT_MS, () =>
          closeSession(session.id, 'idleTimeout'),
        );
        progress.watch(connection._socket);
        catalogueReplies(connection, authAfterTls);
        this.#sessions.set(session.id, {
          address,
          errors: 0,
          messages: 0,
          openedAt: Date.now(),
          timer,
          progress,
        });
        callback();
      },
      onSecure: (socket, session, callback) => {
        progressOf(session)?.watch(socket);
        callback();
      },
      onClose: (session) => {
        const state = this.#sessions.get(session.id);
        if (!state) return;
        clearTimeout(state.timer);
        state.progress.stop();
        this.#sessions.delete(session.id);
        open--;
        // One line per session, with its outcome; never what was said in it (keys, addresses).
        this.log.info(
          {
            listener: options.name,
            client: state.address,
            messages: state.messages,
            refused: state.errors,
            ms: Date.now() - state.openedAt,
          },
          'SMTP session',
        );
        const left = (this.#perAddress.get(state.address) ?? 1) - 1;
        if (left > 0) this.#perAddress.set(state.address, left);
        else this.#perAddress.delete(state.address);
      },
      onAuth: answering(options.hooks.onAuth, progressOf),
      onMailFrom: answering(checked('MAIL FROM', options.hooks.onMailFrom), progressOf),
      onRcptTo: answering(checked('RCPT TO', options.hooks.onRcptTo), progressOf),
      onData: (stream, session, callback) => {
        const progress = progressOf(session);
        progress?.answering();
        progress?.dataStarted();
        stream.once('end', () => progress?.dataEnded());
        options.hooks.onData(stream, session, (error, message) => {
          const state = this.#sessions.get(session.id);
          if (!error && state) state.messages++;
          progress?.answered();
          callback(error, message);
        });
      },
    });
    server.on('error', (err) => this.log.warn({ err }, 'SMTP connection error'));
    await new Promise<void>((resolve, reject) => {
      server.server.once('error', reject);
      server.listen(options.port, config.SMTP_HOST, () => {
        server.server.off('error', reject);
        resolve();
      });
    });
    this.#servers.push(server);
    return (server.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    this.#stopWatching();
    await Promise.all(this.#servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    for (const state of this.#sessions.values()) clearTimeout(state.timer);
  }
}

/** A hook of smtp-server's `(argument, session, callback)` shape, its time of answering kept off the progress timer. */
function answering<A, C extends (...result: never[]) => void>(
  hook: ((argument: A, session: SMTPServerSession, callback: C) => void) | undefined,
  progressOf: (session: SMTPServerSession) => ProgressTimer | undefined,
) {
  if (!hook) return undefined;
  return (argument: A, session: SMTPServerSession, callback: C) => {
    const progress = progressOf(session);
    progress?.answering();
    hook(argument, session, ((...result: Parameters<C>) => {
      progress?.answered();
      callback(...result);
    }) as C);
  };
}

/**
 * Two replies smtp-server writes itself, made ours. A `SIZE=` above the limit at MAIL gets the catalogue's
 * 552 5.3.4, as the message would (docs/smtp.md). With `authAfterTls`, EHLO leaves AUTH out until TLS is up
 * (RFC 4954 §4: no plaintext mechanism before TLS): smtp-server would offer it and then refuse it with 538, which
 * misleads clients that pick their mechanism from EHLO. AUTH before TLS is still answered 538 (docs/smtp.md).
 */
function catalogueReplies(connection: Connection, authAfterTls: boolean) {
  const send = connection.send.bind(connection);
  const tooBig = new SmtpReply('messageTooBig');
  connection.send = (code, data, context) => {
    if (code === 552 && context === 'MESSAGE_TOO_BIG') return send(code, tooBig.message, false);
    const hideAuth = authAfterTls && code === 250 && Array.isArray(data) && !connection.secure;
    // The catalogue's replies carry their own enhanced code: smtp-server adds one only to its own.
    const coded = typeof data === 'string' && ENHANCED_CODE.test(data);
    return send(code, hideAuth ? data.filter((line) => !/^AUTH /.test(line)) : data, coded ? false : context);
  };
}
