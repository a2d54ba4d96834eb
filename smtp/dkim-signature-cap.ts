import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { MIME_LIMITS } from '../domain/received-emails/mime-shape.ts';

/**
 * Signatures a received message's DKIM check verifies: the first ones of its header, the newest signers' (RFC
 * 6376 §6.1 lets a verifier limit them; OpenDKIM verifies 3, rspamd 5). Each signature of its own body length
 * (`l=`) makes the check hash the whole body once more, and each its own key look-up, one after the other: the
 * 64 KB a header may hold carry thousands, minutes of CPU for one message of a few megabytes.
 */
export const MAX_DKIM_SIGNATURES = 5;

const END_OF_HEADER = Buffer.from('\r\n\r\n');
const CR = 0x0d;
const LF = 0x0a;

/** The start of a DKIM-Signature field: its name at the start of a line, any case, spaces before the colon. */
const SIGNATURE_FIELD = /^dkim-signature[ \t]*:/i;
const SIGNATURE_FIELDS = new RegExp(SIGNATURE_FIELD.source, 'gim');

/**
 * A header block (CRLF lines) with no DKIM-Signature field after the `max`th, each dropped with its folded lines;
 * the same bytes when it has no more than `max`.
 */
export function capDkimSignatures(header: Buffer, max: number): Buffer {
  const text = header.toString('latin1');
  if ((text.match(SIGNATURE_FIELDS)?.length ?? 0) <= max) return header;
  let seen = 0;
  let dropping = false;
  const kept = text.split('\r\n').filter((line) => {
    if (!line.startsWith(' ') && !line.startsWith('\t'))
      dropping = SIGNATURE_FIELD.test(line) && ++seen > max;
    return !dropping;
  });
  return Buffer.from(kept.join('\r\n'), 'latin1');
}

/**
 * A message (CRLF lines, as the MX keeps them) with at most `max` DKIM-Signature fields in its own header, the
 * first ones; its body and its parts' headers pass as they are. The header is held until its end: at most what
 * the MIME limits let a header be, or it is taken as ending there.
 */
class DkimSignatureCap extends Transform {
  readonly #max: number;
  /** What came of the header so far; undefined once it has passed. */
  #head: Buffer | undefined = Buffer.alloc(0);

  constructor(max: number) {
    super();
    this.#max = max;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (!this.#head) {
      done(null, chunk);
      return;
    }
    const head = this.#head.length === 0 ? chunk : Buffer.concat([this.#head, chunk]);
    // A message that starts with its empty line has no header of its own.
    const end = head[0] === CR && head[1] === LF ? 0 : head.indexOf(END_OF_HEADER);
    if (end < 0 && head.length <= MIME_LIMITS.headerBytes) {
      this.#head = head;
      done();
      return;
    }
    this.#head = undefined;
    const header = end < 0 ? head : head.subarray(0, end);
    if (header.length > 0) this.push(capDkimSignatures(header, this.#max));
    done(null, header.length < head.length ? head.subarray(header.length) : undefined);
  }

  override _flush(done: TransformCallback): void {
    done(null, this.#head?.length ? capDkimSignatures(this.#head, this.#max) : undefined);
  }
}

/** `message` through the cap (DkimSignatureCap); an error of `message` ends it too. */
export function withDkimSignaturesCapped(message: Readable, max = MAX_DKIM_SIGNATURES): Readable {
  const capped = new DkimSignatureCap(max);
  message.on('error', (error) => capped.destroy(error));
  return message.pipe(capped);
}
