import type { Readable } from 'node:stream';
import type { ReplyName } from './replies.ts';

/** RFC 5321 §4.5.3.1.6: a line of a message is at most 998 characters before its CRLF. */
const MAX_LINE = 998;
const CR = 0x0d;
const LF = 0x0a;

export interface ReadMessage {
  bytes: Buffer;
  /** Why the message is refused, when it is: the first rule it breaks. */
  problem?: ReplyName;
}

/**
 * Reads a message's DATA to the end, checking each byte on the way: every line ends with CRLF (a bare CR or LF
 * is what SMTP smuggling splits messages on downstream, so none is ever passed on), no NUL, no line over 998
 * characters, 8-bit bytes only when MAIL FROM declared them (BODY=8BITMIME; at the MX, SMTPUTF8 too), and no more
 * than the size limit. A refused message is still read to its end (the session goes on), but not kept. `keep`
 * takes the pieces as they pass (the MX writes them to disk as they arrive); without it they are gathered into
 * `bytes`. What `keep` took of a refused message is the caller's to discard.
 */
export async function readMessage(
  stream: Readable,
  eightBitAllowed: boolean,
  keep?: (chunk: Buffer) => Promise<void>,
): Promise<ReadMessage> {
  const chunks: Buffer[] = [];
  let problem: ReplyName | undefined;
  let previous = LF; // the byte before the chunk: the message starts at the start of a line
  let lineLength = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    // smtp-server flags DATA past the size limit and passes it on: from there nothing is kept (a client could
    // otherwise fill the disk or the heap before its 552), and the rest is only drained.
    if (!problem && (stream as { sizeExceeded?: boolean }).sizeExceeded) problem = 'messageTooBig';
    if (problem) continue;
    for (let i = 0; i < chunk.length && !problem; i++) {
      const byte = chunk[i];
      if (byte === LF) {
        if (previous !== CR) problem = 'bareLineEnding';
        lineLength = 0;
      } else if (previous === CR) {
        problem = 'bareLineEnding';
      } else if (byte === 0) {
        problem = 'nulByte';
      } else if (byte >= 0x80 && !eightBitAllowed) {
        problem = 'eightBitUndeclared';
      } else if (byte !== CR && ++lineLength > MAX_LINE) {
        problem = 'lineTooLong';
      }
      previous = byte;
    }
    if (problem) continue;
    if (keep) await keep(chunk);
    else chunks.push(chunk);
  }
  // smtp-server ends DATA at CRLF.CRLF and passes the last line's CRLF on, so a message ends with CRLF.
  if (!problem && previous === CR) problem = 'bareLineEnding';
  return problem ? { bytes: Buffer.alloc(0), problem } : { bytes: Buffer.concat(chunks) };
}
