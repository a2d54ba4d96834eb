/**
 * The header section of a message as fields, each with its folded lines, so that some can be removed or added
 * and the rest passed on byte for byte. Bytes are read as latin1 so that 8-bit header text survives untouched.
 */

export interface HeaderField {
  /** Lower case. */
  name: string;
  /** Unfolded and trimmed. */
  value: string;
  /** The field's own lines, CRLFs included. */
  raw: string;
}

export interface SplitMessage {
  fields: HeaderField[];
  /** Everything after the header section (its empty line included). */
  body: Buffer;
}

export function splitMessage(message: Buffer): SplitMessage {
  const end = message.indexOf('\r\n\r\n');
  const headerEnd = end < 0 ? message.length : end + 2;
  const lines = message
    .subarray(0, headerEnd)
    .toString('latin1')
    .split(/(?<=\r\n)/);
  const fields: HeaderField[] = [];
  for (const line of lines) {
    const last = fields.at(-1);
    if (last && /^[ \t]/.test(line)) last.raw += line;
    else fields.push({ name: '', value: '', raw: line });
  }
  for (const f of fields) {
    const colon = f.raw.indexOf(':');
    f.name = colon < 0 ? '' : f.raw.slice(0, colon).trim().toLowerCase();
    f.value =
      colon < 0
        ? ''
        : f.raw
            .slice(colon + 1)
            .replace(/\r\n/g, '')
            .trim();
  }
  return { fields, body: message.subarray(headerEnd) };
}

export function joinMessage({ fields, body }: SplitMessage): Buffer {
  return Buffer.concat([Buffer.from(fields.map((f) => f.raw).join(''), 'latin1'), body]);
}

/** A new field, folded nowhere: values are short ones Postline writes. */
export const headerField = (name: string, value: string): HeaderField => ({
  name: name.toLowerCase(),
  value,
  raw: `${name}: ${value}\r\n`,
});

/** RFC 5322 date-time in UTC: `Tue, 24 Nov 2026 06:59:49 +0000`. */
export const rfc5322Date = (at: Date) => at.toUTCString().replace('GMT', '+0000');
