/**
 * A real SMTP server (smtp-server) on 127.0.0.1, port 0, for tests: records every accepted message with its
 * envelope and raw bytes, counts connections (current, total, most at once), and answers scripted replies.
 *
 *   const sink = await startSmtpSink({ starttls: true });
 *   sink.scriptRecipient('later@example.com', { code: 451, message: '4.3.0 try again later' }); // once, then 250
 *   sink.scriptRecipient('gone@example.com', { code: 550, message: '5.1.1 no such user' }, 'always');
 *   ... await sink.waitForMessages(1); sink.messages[0].secure === true
 *
 * A throttling provider: `startSmtpSink({ refuseAfter: { messages: 20, reply: { code: 421, message: '4.7.28 …' } } })`
 * accepts 20 messages, then answers every further message's DATA with the reply (kept in `sink.refused`).
 */
import { EventEmitter } from 'node:events';
import type { AddressInfo } from 'node:net';
import { generate } from 'selfsigned';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { PATIENCE_MS } from './patience.ts';

export interface SmtpReply {
  code: number;
  message: string;
}

export interface ReceivedMessage {
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
  /** The transaction ran over TLS (STARTTLS or implicit). */
  secure: boolean;
  /** The authenticated user, when the client logged in. */
  user?: string;
  /** The name the client gave in EHLO/HELO. */
  heloName: string;
  /** The address the client connected from (its bound source address). */
  remoteAddress: string;
  sessionId: string;
  /** When the sink accepted it (its 250 to the end of data). */
  receivedAt: Date;
}

export interface SmtpSinkOptions {
  /** Offer STARTTLS with a fresh self-signed certificate. */
  starttls?: boolean;
  /** Implicit TLS from the first byte (smtps). */
  implicitTls?: boolean;
  /** The certificate TLS presents (PEM), instead of a fresh self-signed one for `localhost`. */
  certificate?: { key: string; cert: string };
  /** Require AUTH PLAIN/LOGIN with these credentials (allowed without TLS too). */
  auth?: { user: string; pass: string };
  /** Hold the reply to each message's DATA this long, so that concurrent deliveries overlap. */
  dataDelayMs?: number;
  /** Once this many messages are accepted, every further message's DATA gets `reply` (a throttling provider). */
  refuseAfter?: { messages: number; reply: SmtpReply };
  /** Listen on this loopback address (127.0.0.1 by default): two sinks on one port stand for two MX hosts. */
  host?: string;
  /** Listen on this port (0, a free one, by default). */
  port?: number;
  /** Hold the reply to each message's DATA until this resolves (a destination that answers when a test says). */
  hold?: () => Promise<void>;
}

export interface SmtpSink {
  host: string;
  port: number;
  messages: ReceivedMessage[];
  /** Messages whose DATA got a refusal (`scriptData` or `refuseAfter`), with when. */
  refused: { rcptTo: string[]; reply: SmtpReply; at: Date }[];
  connections: { current: number; total: number; maxConcurrent: number };
  /** Messages whose whole data has arrived and whose reply the sink still holds back (`dataDelayMs`, `hold`). */
  holding: number;
  /** Every RCPT TO the sink saw, with the code it answered. */
  rcptLog: { recipient: string; code: number }[];
  /**
   * The next RCPT TO replies for `recipient` (case-insensitive), one per attempt; 250 once they are used up.
   * With `'always'` as the last argument the last reply repeats for ever.
   */
  scriptRecipient(recipient: string, ...replies: (SmtpReply | 'always')[]): void;
  /** Replies to the next messages' DATA (one per message, in order); 250 once used up. */
  scriptData(...replies: SmtpReply[]): void;
  /** Resolves once at least `count` messages have been accepted; rejects past `timeoutMs` (PATIENCE_MS). */
  waitForMessages(count: number, timeoutMs?: number): Promise<ReceivedMessage[]>;
  /** Closes every open client connection from the server side (an idle connection the server gave up on). */
  dropConnections(): Promise<void>;
  /** Forgets messages, scripts and counters (connections stay counted as current). */
  reset(): void;
  close(): Promise<void>;
}

const smtpError = (reply: SmtpReply) => Object.assign(new Error(reply.message), { responseCode: reply.code });

export async function startSmtpSink(options: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const tls = options.starttls || options.implicitTls;
  const pems = options.certificate
    ? { private: options.certificate.key, cert: options.certificate.cert }
    : tls
      ? await generate([{ name: 'commonName', value: 'localhost' }], { keySize: 2048, algorithm: 'sha256' })
      : null;
  const events = new EventEmitter();
  const recipientScripts = new Map<string, { replies: SmtpReply[]; always: boolean }>();
  let dataScript: SmtpReply[] = [];
  const disabled = [...(tls && !options.implicitTls ? [] : ['STARTTLS']), ...(options.auth ? [] : ['AUTH'])];

  const sink: SmtpSink = {
    host: options.host ?? '127.0.0.1',
    port: 0,
    messages: [],
    refused: [],
    connections: { current: 0, total: 0, maxConcurrent: 0 },
    holding: 0,
    rcptLog: [],
    scriptRecipient(recipient, ...replies) {
      const always = replies.at(-1) === 'always';
      recipientScripts.set(recipient.toLowerCase(), {
        replies: replies.filter((r): r is SmtpReply => r !== 'always'),
        always,
      });
    },
    scriptData(...replies) {
      dataScript.push(...replies);
    },
    waitForMessages(count, timeoutMs = PATIENCE_MS) {
      if (sink.messages.length >= count) return Promise.resolve(sink.messages);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          events.off('message', check);
          reject(new Error(`smtp sink: expected ${count} messages, got ${sink.messages.length}`));
        }, timeoutMs);
        const check = () => {
          if (sink.messages.length < count) return;
          clearTimeout(timer);
          events.off('message', check);
          resolve(sink.messages);
        };
        events.on('message', check);
      });
    },
    async dropConnections() {
      const open = (server as unknown as { connections: Set<{ close(): void }> }).connections;
      for (const connection of open) connection.close();
      // onClose runs once each socket has closed.
      for (const end = Date.now() + PATIENCE_MS; sink.connections.current > 0 && Date.now() < end; )
        await new Promise((r) => setTimeout(r, 10));
    },
    reset() {
      sink.messages.length = 0;
      sink.refused.length = 0;
      sink.rcptLog.length = 0;
      recipientScripts.clear();
      dataScript = [];
      sink.connections.total = 0;
      sink.connections.maxConcurrent = sink.connections.current;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };

  const server = new SMTPServer({
    secure: options.implicitTls ?? false,
    ...(pems ? { key: pems.private, cert: pems.cert } : {}),
    disabledCommands: disabled,
    authOptional: !options.auth,
    allowInsecureAuth: true,
    authMethods: ['PLAIN', 'LOGIN'],
    logger: false,
    banner: 'Postline test sink',
    onConnect(_session, callback) {
      const c = sink.connections;
      c.current++;
      c.total++;
      c.maxConcurrent = Math.max(c.maxConcurrent, c.current);
      callback();
    },
    onClose() {
      sink.connections.current--;
    },
    onAuth(auth, _session, callback) {
      if (options.auth && auth.username === options.auth.user && auth.password === options.auth.pass) {
        return callback(null, { user: auth.username });
      }
      callback(smtpError({ code: 535, message: '5.7.8 authentication failed' }));
    },
    onRcptTo(address, _session, callback) {
      const recipient = address.address;
      const script = recipientScripts.get(recipient.toLowerCase());
      const reply =
        script && (script.always && script.replies.length === 1 ? script.replies[0] : script.replies.shift());
      sink.rcptLog.push({ recipient, code: reply?.code ?? 250 });
      callback(reply ? smtpError(reply) : undefined);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const finish = () => {
          const limit = options.refuseAfter;
          const reply =
            dataScript.shift() ?? (limit && sink.messages.length >= limit.messages ? limit.reply : undefined);
          if (reply) {
            const rcptTo = session.envelope.rcptTo.map((r) => r.address);
            sink.refused.push({ rcptTo, reply, at: new Date() });
            return callback(smtpError(reply));
          }
          sink.messages.push(record(session, Buffer.concat(chunks)));
          events.emit('message');
          callback(null, 'Ok: queued');
        };
        const { dataDelayMs, hold } = options;
        if (!dataDelayMs && !hold) return finish();
        sink.holding++;
        const held = hold ? hold() : new Promise((r) => setTimeout(r, dataDelayMs));
        void held.then(() => {
          sink.holding--;
          finish();
        });
      });
    },
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, sink.host, () => resolve());
  });
  server.on('error', () => {
    // Client-side resets (a test closing its MTA mid-session) are not the sink's problem.
  });
  sink.port = (server.server.address() as AddressInfo).port;
  return sink;
}

function record(session: SMTPServerSession, raw: Buffer): ReceivedMessage {
  const user = session.user as unknown;
  return {
    mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
    rcptTo: session.envelope.rcptTo.map((r) => r.address),
    raw,
    secure: session.secure,
    user: typeof user === 'string' ? user : undefined,
    heloName: session.hostNameAppearsAs,
    remoteAddress: session.remoteAddress.replace(/^::ffff:/, ''),
    sessionId: session.id,
    receivedAt: new Date(),
  };
}
