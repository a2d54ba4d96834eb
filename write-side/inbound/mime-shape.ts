/**
 * How much MIME structure a received message may have. mailparser builds a node per part and recurses into
 * nested multiparts and attached messages with no limit of its own, so a message of 10,000 parts or 100 levels
 * would cost memory and time out of proportion to its size: it is measured here first, in one pass over its
 * lines that allocates nothing per part.
 */
export const MIME_LIMITS = {
  parts: 500,
  depth: 20,
  /** Bytes of one header block (the message's, or a part's). */
  headerBytes: 64 * 1024,
} as const;

export type MimeShapeProblem = 'tooManyParts' | 'tooDeep' | 'headerTooBig';

const CR = 0x0d;
const LF = 0x0a;
const DASH = 0x2d;

/** The Content-Type of a header block: `multipart` with its boundary, an attached message, or anything else. */
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
  return { message: type === 'message/rfc822' || type === 'message/global' };
}

/** The first limit of MIME_LIMITS that the message breaks, if any. */
export function mimeShapeProblem(raw: Buffer): MimeShapeProblem | undefined {
  // Open containers, outermost first: a multipart's boundary, or null for an attached message.
  const open: (string | null)[] = [];
  let parts = 1;
  let inHeaders = true;
  let headerStart = 0;
  for (let start = 0; start < raw.length; ) {
    let end = raw.indexOf(LF, start);
    if (end < 0) end = raw.length;
    const lineEnd = end > start && raw[end - 1] === CR ? end - 1 : end;
    if (inHeaders) {
      if (start - headerStart > MIME_LIMITS.headerBytes) return 'headerTooBig';
      if (lineEnd === start) {
        // The header block ends: what it declares opens a container.
        const type = contentTypeOf(raw.toString('latin1', headerStart, start));
        if (type.multipartBoundary !== undefined) open.push(type.multipartBoundary);
        else if (type.message) open.push(null);
        if (open.length > MIME_LIMITS.depth) return 'tooDeep';
        // An attached message's own header block follows at once.
        inHeaders = type.message === true;
        headerStart = end + 1;
      }
    } else if (raw[start] === DASH && raw[start + 1] === DASH) {
      const line = raw.toString('latin1', start + 2, lineEnd).trimEnd();
      for (let i = open.length - 1; i >= 0; i--) {
        const boundary = open[i];
        if (boundary === null) continue;
        if (line === boundary) {
          open.length = i + 1; // a new part of this multipart closes whatever was open inside the last one
          if (++parts > MIME_LIMITS.parts) return 'tooManyParts';
          inHeaders = true;
          headerStart = end + 1;
          break;
        }
        if (line === `${boundary}--`) {
          open.length = i;
          break;
        }
      }
    }
    start = end + 1;
  }
  return undefined;
}
