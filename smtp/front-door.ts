import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import type { Logger } from '../platform/logger.ts';
import type { Services } from '../platform/services.ts';
import { MAX_MESSAGE_BYTES, type ReplyName, SmtpReply } from './replies.ts';
import { loadCertificate, smtpHostname, watchCertificate } from './tls.ts';

/** Refused commands one session may make before it is closed with 421. */
const MAX_ERRORS_PER_SESSION = 10;

/** What the front door keeps of a session while it is open. */
export interface SessionState {
  address: string;
  errors: number;
  /** Messages answered 250 in the session. */
  messages: number;
  openedAt: number;
  timer: NodeJS.Timeout;
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
  hooks: Pick<SMTPServerOptions, 'onAuth' | 'onMailFrom' | 'onRcptTo'> &
    Required<Pick<SMTPServerOptions, 'onData'>>;
}

/**
 * The SMTP front door (docs/smtp.md): the listeners of the relay and the MX, built on smtp-server with what they
 * share: the certificate (reloaded when its files change), per-address connection limits, idle and session
 * time-outs, and a session's allowance of refusals. Each listener brings its own hooks.
 */
export class FrontDoor {
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

  static async open(services: Services): Promise<FrontDoor> {
    return new FrontDoor(services, await loadCertificate(services.config, services.log));
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
    const closeSession = (id: string, reply: ReplyName) => {
      for (const connection of server.connections) {
        if (connection.id !== id) continue;
        const e = new SmtpReply(reply);
        connection.send(e.responseCode, e.message);
      }
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
      socketTimeout: config.SMTP_IDLE_TIMEOUT_MS,
      // On shutdown, new commands are answered 421 at once; a message being received gets the grace to finish.
      closeTimeout: Math.max(1, config.SHUTDOWN_GRACE_MS),
      disableReverseLookup: true,
      logger: false,
      onConnect: (session, callback) => {
        const address = session.remoteAddress;
        const open = this.#perAddress.get(address) ?? 0;
        if (open >= config.SMTP_MAX_CONNECTIONS_PER_IP) return callback(new SmtpReply('tooManyConnections'));
        this.#perAddress.set(address, open + 1);
        const timer = setTimeout(
          () => closeSession(session.id, 'sessionTooLong'),
          config.SMTP_SESSION_TIMEOUT_MS,
        );
        timer.unref();
        this.#sessions.set(session.id, { address, errors: 0, messages: 0, openedAt: Date.now(), timer });
        callback();
      },
      onClose: (session) => {
        const state = this.#sessions.get(session.id);
        if (!state) return;
        clearTimeout(state.timer);
        this.#sessions.delete(session.id);
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
        const open = (this.#perAddress.get(state.address) ?? 1) - 1;
        if (open > 0) this.#perAddress.set(state.address, open);
        else this.#perAddress.delete(state.address);
      },
      ...options.hooks,
      onData: (stream, session, callback) =>
        options.hooks.onData(stream, session, (error, message) => {
          const state = this.#sessions.get(session.id);
          if (!error && state) state.messages++;
          callback(error, message);
        }),
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
