/**
 * How much MIME structure a received message may have. mailparser builds a node per part and recurses into
 * nested multiparts and attached messages with no limit of its own, so a message of 10,000 parts or 100 levels
 * would cost memory and time out of proportion to its size: it is measured here first, line by line as it
 * arrives, keeping nothing but the header block being read and the boundaries that are open.
 */
export const MIME_LIMITS = {
  parts: 500,
  depth: 20,
  /** Bytes of one header block (the message's, or a part's). */
  headerBytes: 64 * 1024,
} as const;

export type MimeShapeProblem = 'tooManyParts' | 'tooDeep' | 'headerTooBig';

const LF = 0x0a;
const CR = 0x0d;
const DASH = 0x2d;

/** Transfer encodings under which an attached message is itself MIME (RFC 2046 5.2.1); under any other it is data. */
const IDENTITY_ENCODINGS = new Set(['', '7bit', '8bit', 'binary']);

/**
 * The Content-Type of a header block: `multipart` with its boundary, an attached message, or anything else. A
 * `message/*` part that is base64 or quoted-printable (forbidden, but sent) is data, as mailparser reads it:
 * its encoded lines are body, never a header block.
 */
function contentTypeOf(headers: string): { multipartBoundary?: string; message?: boolean } {
  const unfolded = headers.replace(/\r?\n[ \t]+/g, ' ');
  const field = /^content-type:[ \t]*([^\r\n]*)/im.exec(unfolded)?.[1];
  if (!field) return {};
  const type = field.split(';')[0].trim().toLowerCase();
  if (type.startsWith('multipart/')) {
    const m = /;\s*boundary\s*=\s*(?:"([^"]+)"|([^\s;]+))/i.exec(field);
    const boundary = m?.[1] ?? m?.[2];
    return boundary ? { multipartBoundary: boundary } : {};
  }
  const encoding = (/^content-transfer-encoding:[ \t]*([^\r\n]*)/im.exec(unfolded)?.[1] ?? '')
    .replace(/\([^)]*\)/g, '')
    .trim()
    .toLowerCase();
  return {
    message: (type === 'message/rfc822' || type === 'message/global') && IDENTITY_ENCODINGS.has(encoding),
  };
}

/** Measures a message's MIME shape as its bytes arrive (`push`, in any pieces); `problem` is the first limit broken. */
export class MimeShape {
  problem: MimeShapeProblem | undefined;
  /** Open containers, outermost first: a multipart's boundary, or null for an attached message. */
  readonly #open: (string | null)[] = [];
  #parts = 1;
  #inHeaders = true;
  /** The header block read so far (latin1), while in one. */
  #headers = '';
  /** The start of a line that the last piece cut. */
  #partial: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): this {
    if (this.problem) return this;
    let data = this.#partial.length > 0 ? Buffer.concat([this.#partial, chunk]) : chunk;
    let start = 0;
    for (let end = data.indexOf(LF); end >= 0 && !this.problem; end = data.indexOf(LF, start)) {
      this.#line(data, start, end);
      start = end + 1;
    }
    data = data.subarray(start);
    // A line is at most 998 characters (the reader refuses more); past a header block's limit it is refused anyway.
    if (data.length > MIME_LIMITS.headerBytes) this.problem ??= 'headerTooBig';
    this.#partial = Buffer.from(data);
    return this;
  }

  #line(data: Buffer, start: number, end: number) {
    const lineEnd = end > start && data[end - 1] === CR ? end - 1 : end;
    // A delimiter line is one wherever it stands, in a header block too (as mailparser reads it): a part cut off
    // in its headers ends there, and its lines never count towards the next part's header block.
    if (data[start] === DASH && data[start + 1] === DASH) {
      if (this.#delimiter(data.toString('latin1', start + 2, lineEnd).trimEnd())) return;
    }
    if (!this.#inHeaders) return;
    if (lineEnd > start) {
      this.#headers += data.toString('latin1', start, end + 1);
      if (this.#headers.length > MIME_LIMITS.headerBytes) this.problem = 'headerTooBig';
      return;
    }
    // The header block ends: what it declares opens a container.
    const type = contentTypeOf(this.#headers);
    this.#headers = '';
    if (type.multipartBoundary !== undefined) this.#open.push(type.multipartBoundary);
    else if (type.message) this.#open.push(null);
    if (this.#open.length > MIME_LIMITS.depth) this.problem = 'tooDeep';
    // An attached message's own header block follows at once.
    this.#inHeaders = type.message === true;
  }

  /** Applies `line` (after its `--`) if it is a delimiter of an open multipart; returns whether it was. */
  #delimiter(line: string): boolean {
    for (let i = this.#open.length - 1; i >= 0; i--) {
      const boundary = this.#open[i];
      if (boundary === null) continue;
      if (line !== boundary && line !== `${boundary}--`) continue;
      this.#headers = '';
      if (line === boundary) {
        this.#open.length = i + 1; // a new part of this multipart closes whatever was open inside the last one
        if (++this.#parts > MIME_LIMITS.parts) this.problem = 'tooManyParts';
        this.#inHeaders = true;
      } else {
        this.#open.length = i; // its epilogue, up to the next delimiter of an outer one, is body
        this.#inHeaders = false;
      }
      return true;
    }
    return false;
  }
}

/** The first limit of MIME_LIMITS that a whole message breaks, if any. */
export const mimeShapeProblem = (raw: Buffer): MimeShapeProblem | undefined =>
  new MimeShape().push(raw).problem;
