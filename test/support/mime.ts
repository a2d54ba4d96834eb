/**
 * Just enough MIME reading for tests to check what the MTA sent: unfolded headers (lower-case names), the
 * leaf parts of multiparts with their bodies decoded (base64, quoted-printable). Node built-ins only.
 */
export interface MimePart {
  headers: Map<string, string>;
  contentType: string;
  filename?: string;
  body: Buffer;
}

function splitHead(raw: Buffer): { headers: Map<string, string>; body: Buffer } {
  const text = raw.toString('latin1');
  const end = text.search(/\r?\n\r?\n/);
  const head = end < 0 ? text : text.slice(0, end);
  const bodyStart = end < 0 ? text.length : end + (text.slice(end).startsWith('\r\n\r\n') ? 4 : 2);
  const headers = new Map<string, string>();
  for (const line of head.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0) headers.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  return { headers, body: raw.subarray(bodyStart) };
}

const param = (value: string, name: string) =>
  new RegExp(`${name}\\*?=(?:"([^"]*)"|([^;\\s]+))`, 'i')
    .exec(value)
    ?.slice(1)
    .find((v) => v !== undefined);

function decode(body: Buffer, encoding: string | undefined): Buffer {
  const e = (encoding ?? '7bit').toLowerCase();
  if (e === 'base64') return Buffer.from(body.toString('latin1').replace(/\s+/g, ''), 'base64');
  if (e === 'quoted-printable') {
    const s = body.toString('latin1').replace(/=\r?\n/g, '');
    return Buffer.from(
      s.replace(/=([0-9A-F]{2})/gi, (_m, h) => String.fromCharCode(Number.parseInt(h, 16))),
      'latin1',
    );
  }
  return body;
}

/** The message's headers and its leaf parts, depth first. */
export function parseMime(raw: Buffer): { headers: Map<string, string>; parts: MimePart[] } {
  const { headers, body } = splitHead(raw);
  const parts: MimePart[] = [];
  const walk = (h: Map<string, string>, b: Buffer) => {
    const type = h.get('content-type') ?? 'text/plain';
    const boundary = /^multipart\//i.test(type) ? param(type, 'boundary') : undefined;
    if (!boundary) {
      const disposition = h.get('content-disposition') ?? '';
      const filename = param(disposition, 'filename') ?? param(type, 'name');
      parts.push({
        headers: h,
        contentType: type.split(';')[0].trim().toLowerCase(),
        filename,
        body: decode(b, h.get('content-transfer-encoding')),
      });
      return;
    }
    const chunks = b.toString('latin1').split(`--${boundary}`).slice(1);
    for (const chunk of chunks) {
      if (chunk.startsWith('--')) break;
      const inner = Buffer.from(chunk.replace(/^\r?\n/, '').replace(/\r?\n$/, ''), 'latin1');
      const p = splitHead(inner);
      walk(p.headers, p.body);
    }
  };
  walk(headers, body);
  return { headers, parts };
}
