import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { MIME_LIMITS } from '../domain/received-emails/mime-shape.ts';
import { joinMessage, splitMessage } from './message-headers.ts';

/**
 * Signatures a received message's DKIM check verifies: the first ones of its header, the newest signers' (RFC
 * 6376 §6.1 lets a verifier limit them; OpenDKIM verifies 3, rspamd 5). Each signature of its own body length
 * (`l=`) makes the check hash the whole body once more, and each its own key look-up, one after the other: the
 * 64 KB a header may hold carry thousands, minutes of CPU for one message of a few megabytes.
 */
export const MAX_DKIM_SIGNATURES = 5;

const END_OF_HEADER = Buffer.from('\r\n\r\n');

/** A DKIM-Signature field's start: its name at the start of a line, any case, spaces before the colon. */
const SIGNATURE_FIELDS = /^dkim-signature[ \t]*:/gim;

/**
 * Where the header of `message` (its start, at least) ends: 0 when the message starts with its empty line (it has
 * none of its own), -1 when its end is not there yet.
 */
const headerEnd = (message: Buffer) =>
  message[0] === 0x0d && message[1] === 0x0a ? 0 : message.indexOf(END_OF_HEADER);

/**
 * `message` (its header, and any of what follows) with no DKIM-Signature field in its header after the `max`th,
 * each dropped with its folded lines; the same bytes when it has no more than `max`.
 */
export function capDkimSignatures(message: Buffer, max: number): Buffer {
  const end = headerEnd(message);
  const header = end < 0 ? message : message.subarray(0, end);
  // Counted first, on the message's own bytes: most have one or two, and are passed on as they are.
  if ((header.toString('latin1').match(SIGNATURE_FIELDS)?.length ?? 0) <= max) return message;
  const { fields, body } = splitMessage(message);
  let seen = 0;
  return joinMessage({ fields: fields.filter((f) => f.name !== 'dkim-signature' || ++seen <= max), body });
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
    if (headerEnd(head) < 0 && head.length <= MIME_LIMITS.headerBytes) {
      this.#head = head;
      done();
      return;
    }
    this.#head = undefined;
    done(null, capDkimSignatures(head, this.#max));
  }

  override _flush(done: TransformCallback): void {
    done(null, this.#head?.length ? capDkimSignatures(this.#head, this.#max) : undefined);
  }
}

/**
 * `message` through the cap (DkimSignatureCap). The two end together: an error of `message` ends the capped
 * stream, and the capped stream closed (read to its end, or destroyed by a reader that gave up) destroys
 * `message`, with what was left unread. Wired by hand: `stream.pipeline` would do the same, but it makes an
 * AbortError, stack and all, at every end (each message received).
 */
export function withDkimSignaturesCapped(message: Readable, max = MAX_DKIM_SIGNATURES): Readable {
  const capped = new DkimSignatureCap(max);
  message.once('error', (error) => capped.destroy(error));
  capped.once('close', () => message.destroy());
  return message.pipe(capped);
}
