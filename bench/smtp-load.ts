/**
 * The load Postfix's `smtp-source -d -s 8` puts on a server: SESSIONS connections, each sending its share of the
 * messages one after the other (no pipelining), one recipient each. The same generator drives Postline and the
 * peer it is compared with, so both sides see the same bytes, the same sessions and the same client's CPU.
 */
import { authPlain, type RawSmtp, rawSmtp } from '../test/support/raw-smtp.ts';

export interface SmtpLoad {
  sessions: number;
  ehlo: string;
  /** AUTH PLAIN with this key once per session; none for a peer that relays for loopback clients. */
  key?: string;
  from: string;
  to: (i: number) => string;
  /** The DATA of message i, dot-terminated. */
  message: (i: number) => string;
}

async function expectReply(c: RawSmtp, line: string | null, code: number) {
  const reply = line === null ? await c.reply() : await c.command(line);
  if (reply.code !== code) throw new Error(`${line ?? 'DATA'}: ${reply.code} ${reply.text}`);
}

async function session(port: number, load: SmtpLoad, messages: number[]) {
  const c = await rawSmtp(port);
  await expectReply(c, `EHLO ${load.ehlo}`, 250);
  if (load.key) await expectReply(c, `AUTH PLAIN ${authPlain(load.key)}`, 235);
  for (const i of messages) {
    await expectReply(c, `MAIL FROM:<${load.from}>`, 250);
    await expectReply(c, `RCPT TO:<${load.to(i)}>`, 250);
    await expectReply(c, 'DATA', 354);
    c.write(load.message(i));
    await expectReply(c, null, 250);
  }
  await c.command('QUIT');
  c.close();
}

/** Sends messages first … first+count-1 over `load.sessions` sessions; resolves once every one is answered 250. */
export async function runLoad(port: number, load: SmtpLoad, first: number, count: number): Promise<void> {
  const shares = Array.from({ length: load.sessions }, (_, s) =>
    Array.from({ length: count }, (_, i) => first + i).filter((_, i) => i % load.sessions === s),
  );
  await Promise.all(shares.map((share) => session(port, load, share)));
}
