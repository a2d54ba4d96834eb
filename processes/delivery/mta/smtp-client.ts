import { isIP } from 'node:net';
import { Readable } from 'node:stream';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { Logger } from '../../../platform/logger.ts';
import { replyClass, smtpReplies, smtpSessions } from '../../../platform/metrics.ts';
import { storableText } from '../../../platform/storable-text.ts';

/** What the server said about one recipient of a transaction. */
export interface RecipientReply {
  recipient: string;
  result: 'delivered' | 'deferred' | 'bounced';
  smtpCode?: number;
  smtpResponse: string;
}

export interface SessionOptions {
  /** Address to connect to (an IP for MX delivery, a host name for the smarthost). */
  host: string;
  port: number;
  /** TLS server name (SNI) and the name logged; the MX host name. */
  servername: string;
  /** Implicit TLS (smtps); otherwise STARTTLS is used whenever the server offers it. */
  implicitTls: boolean;
  /** Do not use STARTTLS even when offered (the retry after a failed handshake). */
  ignoreStarttls?: boolean;
  auth?: { user: string; pass: string };
  timeoutMs: number;
  heloName: string;
  /** The local address the connection is bound to (an egress source's); absent, the system's choice. */
  localAddress?: string;
  tls?: { rejectUnauthorized?: boolean; ca?: string[] };
  /** STARTTLS or nothing: a server that does not offer it, or a failed handshake, fails the session. */
  requireTls?: boolean;
  log: Logger;
}

type SmtpError = Error & {
  code?: string;
  responseCode?: number;
  response?: string;
  command?: string;
  recipient?: string;
  rejectedErrors?: SmtpError[];
};

/** The connection's view of the current envelope; read after a DATA failure to know who had been accepted. */
type EnvelopeState = { rejectedErrors?: SmtpError[] };

export const resultForCode = (code: number | undefined): RecipientReply['result'] =>
  code === undefined
    ? 'deferred'
    : code >= 200 && code < 300
      ? 'delivered'
      : code >= 500
        ? 'bounced'
        : 'deferred';

const codeOf = (response: string | undefined): number | undefined => {
  const m = response?.match(/^(\d{3})/);
  return m ? Number(m[1]) : undefined;
};

/** The STARTTLS handshake (not the plain-text session before it) failed: worth one more try without TLS. */
export const starttlsFailed = (err: unknown): boolean =>
  (err as { starttlsFailed?: boolean })?.starttlsFailed === true;

/** The server had accepted DATA (354) when the connection failed: it may have stored the message, so the
 * transaction is not run again on another connection. */
export const dataAccepted = (err: unknown): boolean =>
  (err as { dataAccepted?: boolean })?.dataAccepted === true;

/** Replies end up in events and read models; the server decides what it says (see storableText). */
const MAX_REPLY_CHARS = 1000;

/** A human-readable reason for an error that carries no SMTP reply (refused, timed out, TLS failure). */
export function describeError(err: unknown): string {
  const e = err as SmtpError;
  // Messages quote the server too (an invalid greeting, say).
  return storableText(e?.response || `${e?.code ?? 'ERROR'}: ${e?.message ?? String(err)}`, MAX_REPLY_CHARS);
}

/**
 * One SMTP connection, opened with EHLO, opportunistic STARTTLS and optional AUTH, able to run several
 * transactions in turn (connection reuse). Errors that carry no SMTP reply mark it unusable.
 */
export class SmtpSession {
  readonly destination: string;
  private readonly connection: SMTPConnection;
  private broken = false;
  private closers: (() => void)[] = [];

  private constructor(connection: SMTPConnection, destination: string) {
    this.connection = connection;
    this.destination = destination;
    connection.on('error', () => {
      this.broken = true;
    });
    connection.on('end', () => {
      this.broken = true;
    });
  }

  /** Connects, says EHLO, upgrades with STARTTLS when offered, authenticates when credentials are given. */
  static open(options: SessionOptions): Promise<SmtpSession> {
    // SNI carries host names only (RFC 6066); a smarthost given as an IP gets none.
    const servername = isIP(options.servername) ? undefined : options.servername;
    const connection = new SMTPConnection({
      host: options.host,
      port: options.port,
      secure: options.implicitTls,
      servername,
      name: options.heloName,
      ...(options.localAddress && { localAddress: options.localAddress }),
      opportunisticTLS: !options.requireTls,
      requireTLS: options.requireTls ?? false,
      ignoreTLS: options.ignoreStarttls ?? false,
      connectionTimeout: options.timeoutMs,
      greetingTimeout: options.timeoutMs,
      socketTimeout: options.timeoutMs,
      dnsTimeout: options.timeoutMs,
      allowInternalNetworkInterfaces: true,
      tls: {
        rejectUnauthorized: options.tls?.rejectUnauthorized ?? true,
        servername,
        ...(options.tls?.ca && { ca: options.tls.ca }),
      },
      logger: false,
    });
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (err: unknown) => {
        if (settled) return;
        settled = true;
        smtpSessions.inc({ result: 'failed' });
        const duringStarttls = connection.upgrading === true || (err as SmtpError)?.code === 'ETLS';
        connection.close();
        reject(
          duringStarttls && !options.implicitTls
            ? Object.assign(err as object, { starttlsFailed: true })
            : err,
        );
      };
      // Errors before connect's callback (e.g. a refused socket) arrive both ways; the first one wins.
      connection.once('error', fail);
      connection.connect((err) => {
        if (err) return fail(err);
        const ready = () => {
          if (settled) return;
          settled = true;
          connection.removeListener('error', fail);
          smtpSessions.inc({ result: 'opened' });
          options.log.debug(
            { mx: options.servername, address: options.host, tls: connection.secure },
            'connected',
          );
          resolve(new SmtpSession(connection, `${options.servername}:${options.port}`));
        };
        if (!options.auth) return ready();
        connection.login({ user: options.auth.user, pass: options.auth.pass }, (loginErr) =>
          loginErr ? fail(loginErr) : ready(),
        );
      });
    });
  }

  get secure(): boolean {
    return this.connection.secure;
  }

  get usable(): boolean {
    return !this.broken && !this.connection.destroyed;
  }

  /**
   * One transaction: MAIL FROM, RCPT TO per recipient, DATA. Resolves with a reply per recipient whenever the
   * server answered; rejects only when the connection failed (no reply to go by), leaving the session unusable,
   * the error marked `dataAccepted` (see there) once the server had accepted DATA.
   * `endAt` (ms since the epoch): a transaction still running then is cut, its socket destroyed with whatever it
   * had yet to write, so that nothing of it reaches the server later.
   */
  async transaction(
    envelopeFrom: string,
    recipients: string[],
    raw: Buffer,
    endAt = Number.POSITIVE_INFINITY,
  ): Promise<RecipientReply[]> {
    let cut: NodeJS.Timeout | undefined;
    let handedOver = false;
    // nodemailer reads the message only after the server's 354 to DATA: the first read marks it handed over.
    const body = new Readable({
      read() {
        handedOver = true;
        this.push(raw);
        this.push(null);
      },
    });
    try {
      const info = await new Promise<SMTPConnection.SentMessageInfo>((resolve, reject) => {
        if (Number.isFinite(endAt))
          cut = setTimeout(
            () => {
              this.abort();
              reject(Object.assign(new Error('the attempt reached its time limit'), { code: 'ETIMEDOUT' }));
            },
            Math.max(0, endAt - Date.now()),
          );
        this.connection.send({ from: envelopeFrom, to: recipients }, body, (err, result) => {
          // The server answered: what follows (RSET) sends nothing that could deliver.
          clearTimeout(cut);
          if (err) reject(err);
          else resolve(result as SMTPConnection.SentMessageInfo);
        });
      });
      const dataCode = codeOf(info.response) ?? 250;
      return this.replies(recipients, info.rejectedErrors as SmtpError[] | undefined, {
        smtpCode: dataCode,
        smtpResponse: info.response,
      });
    } catch (error) {
      const err = error as SmtpError;
      if (!err.responseCode) {
        this.broken = true;
        throw Object.assign(err, { dataAccepted: handedOver });
      }
      // Read before RSET, which clears it.
      const envelope = (this.connection as unknown as { _envelope?: EnvelopeState })._envelope || {};
      const rejectedAtRcpt = err.rejectedErrors ?? envelope.rejectedErrors;
      await this.reset();
      const reply = { smtpCode: err.responseCode, smtpResponse: err.response ?? err.message };
      if (err.command === 'MAIL FROM') return recipients.map((recipient) => this.reply(recipient, reply));
      // All recipients refused, or DATA / the message refused: the latter reply applies to every accepted one.
      return this.replies(recipients, rejectedAtRcpt, reply);
    }
  }

  /** Ends the connection at once: the socket is destroyed, and what it had yet to send is never sent. */
  private abort(): void {
    this.broken = true;
    (this.connection as unknown as { _socket?: { destroy(): void } })._socket?.destroy();
    this.connection.close();
  }

  private replies(
    recipients: string[],
    rejected: SmtpError[] | undefined,
    otherwise: { smtpCode: number; smtpResponse: string },
  ): RecipientReply[] {
    const byRecipient = new Map((rejected ?? []).map((e) => [e.recipient?.toLowerCase(), e]));
    return recipients.map((recipient) => {
      const e = byRecipient.get(recipient.toLowerCase());
      return e
        ? this.reply(recipient, { smtpCode: e.responseCode, smtpResponse: e.response ?? e.message })
        : this.reply(recipient, otherwise);
    });
  }

  private reply(recipient: string, r: { smtpCode?: number; smtpResponse: string }): RecipientReply {
    if (r.smtpCode !== undefined) smtpReplies.inc({ class: replyClass(r.smtpCode) });
    return {
      recipient,
      result: resultForCode(r.smtpCode),
      smtpCode: r.smtpCode,
      smtpResponse: storableText(r.smtpResponse, MAX_REPLY_CHARS),
    };
  }

  /** RSET after a refused transaction so that the connection can be reused; a failure retires it. */
  private reset(): Promise<void> {
    if (!this.usable) return Promise.resolve();
    return new Promise((resolve) =>
      this.connection.reset((err) => {
        if (err) this.broken = true;
        resolve();
      }),
    );
  }

  /** `fn` runs once, when the session is closed (a connection slot given back). */
  onClose(fn: () => void): void {
    this.closers.push(fn);
  }

  /** QUIT, then close whether or not the server answers. */
  close(): void {
    for (const fn of this.closers.splice(0)) fn();
    const wasUsable = this.usable;
    this.broken = true;
    if (!wasUsable) {
      this.connection.close();
      return;
    }
    try {
      this.connection.quit();
      setTimeout(() => this.connection.close(), 1000).unref();
    } catch {
      this.connection.close();
    }
  }
}
