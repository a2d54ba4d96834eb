/**
 * An SMTP receiver that speaks the protocol by hand over raw sockets, on 127.0.0.1 and a free port: for replies and
 * failures smtp-server never produces (control characters in a reply, a connection dropped at a chosen point).
 * Every command gets a default answer (220 greeting, 250 to EHLO and the rest, 354 to DATA, 250 to a message's
 * end, 221 to QUIT); a script replaces the answers it names, or drops the connection there. It records what it
 * received: every command line and every message (envelope and data), each with its connection's number.
 *
 *   const receiver = await startScriptedSmtp({
 *     command: (line, s) => (s.connection === 1 && s.transaction === 2 && /^MAIL FROM/i.test(line) ? 'drop' : undefined),
 *     body: () => '554 5.6.0 refused',
 *   });
 *   ... receiver.messages.map((m) => m.rcptTo); receiver.connections; await receiver.close();
 */
import { createServer, type Socket } from 'node:net';

/** A reply line (without CRLF), `drop` to close the connection instead, or undefined for the default answer. */
export type ScriptedReply = string | 'drop' | undefined;

/** Where a connection stands when a script is asked. */
export interface ScriptedSession {
  /** The connection's number, from 1 in the order they came. */
  connection: number;
  /** The connection's transactions so far (its MAIL FROM commands), the current one included. */
  transaction: number;
  mailFrom: string;
  rcptTo: string[];
}

export interface ScriptedSmtpOptions {
  /** The name in the greeting and the EHLO reply (`scripted.test`). */
  name?: string;
  /** The reply to a command line, asked before the default. */
  command?(line: string, session: ScriptedSession): ScriptedReply;
  /** The reply to a message whose data has arrived (it is recorded first: a drop here loses only the reply). */
  body?(session: ScriptedSession): ScriptedReply;
}

export interface ScriptedMessage {
  connection: number;
  mailFrom: string;
  rcptTo: string[];
  /** The message's lines, dot-unstuffed, joined by CRLF. */
  data: string;
}

export interface ScriptedSmtp {
  port: number;
  /** Every command line received (not the data), in order. */
  commands: { connection: number; line: string }[];
  /** Every message whose data arrived whole (its final dot), whatever the reply. */
  messages: ScriptedMessage[];
  /** Connections accepted so far. */
  readonly connections: number;
  /** Stops listening and closes every open connection (an idle pooled one would hold the close). */
  close(): Promise<void>;
}

const address = (line: string) => /<([^>]*)>/.exec(line)?.[1] ?? '';

export async function startScriptedSmtp(options: ScriptedSmtpOptions = {}): Promise<ScriptedSmtp> {
  const name = options.name ?? 'scripted.test';
  const sockets = new Set<Socket>();
  const commands: ScriptedSmtp['commands'] = [];
  const messages: ScriptedMessage[] = [];
  let connections = 0;

  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    const session: ScriptedSession = { connection: ++connections, transaction: 0, mailFrom: '', rcptTo: [] };
    const view = (): ScriptedSession => ({ ...session, rcptTo: [...session.rcptTo] });
    /** The lines of the message being received, while DATA goes on. */
    let data: string[] | null = null;
    let buffered = '';
    /** Sends the reply, or drops the connection; whether the connection is still open. */
    const answer = (reply: string): boolean => {
      if (reply === 'drop') {
        socket.destroy();
        return false;
      }
      socket.write(`${reply}\r\n`);
      return true;
    };
    const onCommand = (line: string): boolean => {
      commands.push({ connection: session.connection, line });
      if (/^MAIL FROM:/i.test(line))
        Object.assign(session, { transaction: session.transaction + 1, mailFrom: address(line), rcptTo: [] });
      else if (/^RCPT TO:/i.test(line)) session.rcptTo.push(address(line));
      const scripted = options.command?.(line, view());
      if (scripted !== undefined) return answer(scripted);
      if (/^QUIT$/i.test(line)) {
        socket.end('221 bye\r\n');
        return false;
      }
      if (/^DATA$/i.test(line)) {
        data = [];
        return answer('354 go ahead');
      }
      return answer(/^(EHLO|HELO)\b/i.test(line) ? `250 ${name}` : '250 ok');
    };
    const onDataLine = (lines: string[], line: string): boolean => {
      if (line !== '.') {
        lines.push(line.startsWith('.') ? line.slice(1) : line);
        return true;
      }
      data = null;
      const { connection, mailFrom, rcptTo } = session;
      messages.push({ connection, mailFrom, rcptTo: [...rcptTo], data: lines.join('\r\n') });
      return answer(options.body?.(view()) ?? '250 2.0.0 queued');
    };
    answer(`220 ${name} ESMTP`);
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      for (let end = buffered.indexOf('\r\n'); end >= 0; end = buffered.indexOf('\r\n')) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (!(data ? onDataLine(data, line) : onCommand(line))) return;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    commands,
    messages,
    get connections() {
      return connections;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
