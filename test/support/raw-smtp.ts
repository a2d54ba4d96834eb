/**
 * An SMTP client over a raw socket, for the protocol's edge cases that real clients never produce: it writes
 * exactly the bytes it is given and reads whole replies (multi-line ones included).
 *
 *   const c = await rawSmtp(port);             // greeting read
 *   await c.command('EHLO test');              // { code: 250, text: '...' }
 *   c.write('DATA with bare\n.\n');            // bytes as they are
 *   await c.reply();                           // the next reply
 *   await c.startTls();                        // STARTTLS, then TLS on the same connection
 */
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

export interface SmtpReplyLine {
  code: number;
  /** Every line's text after the code, joined by newlines. */
  text: string;
}

export interface RawSmtp {
  greeting: SmtpReplyLine;
  write(data: string | Buffer): void;
  /** The next whole reply; rejects when the server closes first. */
  reply(): Promise<SmtpReplyLine>;
  /** Writes `line` with CRLF and reads the reply. */
  command(line: string): Promise<SmtpReplyLine>;
  /** Sends STARTTLS and, when it is answered 220, goes on over TLS (any certificate); resolves with the reply. */
  startTls(): Promise<SmtpReplyLine>;
  /** Resolves when the server has closed the connection. */
  closed: Promise<void>;
  close(): void;
}

export async function rawSmtp(port: number, options: { tls?: boolean } = {}): Promise<RawSmtp> {
  let socket: Socket = options.tls
    ? tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false })
    : connect({ host: '127.0.0.1', port });
  let buffer = '';
  let ended = false;
  const waiting: (() => void)[] = [];
  const wake = () => {
    for (const w of waiting.splice(0)) w();
  };
  const onData = (d: Buffer) => {
    buffer += d.toString('latin1');
    wake();
  };
  let closedNow!: () => void;
  const closed = new Promise<void>((resolve) => {
    closedNow = resolve;
  });
  const onClose = () => {
    ended = true;
    wake();
    closedNow();
  };
  const attach = (s: Socket) => {
    s.on('data', onData);
    s.on('close', onClose);
    s.on('error', () => {});
  };
  attach(socket);

  const reply = async (): Promise<SmtpReplyLine> => {
    for (;;) {
      // A reply ends with a line whose fourth character is a space: `250 ok`, after any `250-...` lines.
      const m = /^((?:\d{3}-[^\r\n]*\r\n)*)(\d{3})(?: ([^\r\n]*))?\r\n/.exec(buffer);
      if (m) {
        buffer = buffer.slice(m[0].length);
        const lines = [
          ...m[1]
            .split('\r\n')
            .filter(Boolean)
            .map((l) => l.slice(4)),
          m[3] ?? '',
        ];
        return { code: Number(m[2]), text: lines.join('\n') };
      }
      if (ended) throw new Error(`connection closed; unread: ${JSON.stringify(buffer)}`);
      await new Promise<void>((resolve) => waiting.push(resolve));
    }
  };
  const write = (data: string | Buffer) => {
    socket.write(typeof data === 'string' ? Buffer.from(data, 'latin1') : data);
  };
  const command = async (line: string) => {
    write(`${line}\r\n`);
    return reply();
  };
  const greeting = await reply();
  return {
    greeting,
    write,
    reply,
    command,
    async startTls() {
      const answer = await command('STARTTLS');
      if (answer.code !== 220) return answer;
      const plain = socket;
      plain.off('data', onData);
      plain.off('close', onClose);
      socket = tlsConnect({ socket: plain, rejectUnauthorized: false });
      attach(socket);
      await new Promise((resolve) => {
        socket.once('secureConnect', resolve);
        socket.once('close', resolve);
      });
      return answer;
    },
    closed,
    close: () => socket.destroy(),
  };
}

/** AUTH PLAIN's initial response for a key: user `postline`, password the key. */
export const authPlain = (key: string) => Buffer.from(`\0postline\0${key}`).toString('base64');
