import { crc32, gunzipSync, inflateRawSync } from 'node:zlib';

/** The largest report accepted, uncompressed: a bigger one is refused, never inflated further. */
export const MAX_REPORT_BYTES = 10 * 1024 * 1024;

export class UnreadableReport extends Error {}

/**
 * The XML of an aggregate report as mailed (RFC 7489 §7.2.1.1): gzip, zip holding one XML file, or plain XML.
 * Refuses anything else, a zip entry that is neither stored nor deflated, and more than `limit` bytes inflated.
 */
export function unpackReport(bytes: Buffer, limit = MAX_REPORT_BYTES): string {
  try {
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) return text(gunzipSync(bytes, { maxOutputLength: limit }));
    if (bytes.readUInt32LE(0) === 0x04034b50) return text(unzipFirst(bytes, limit));
  } catch (e) {
    if (e instanceof UnreadableReport) throw e;
    throw new UnreadableReport(`report not unpacked: ${(e as Error).message}`);
  }
  if (bytes.length > limit) throw new UnreadableReport('report too large');
  const xml = text(bytes);
  if (!xml.trimStart().startsWith('<')) throw new UnreadableReport('not gzip, zip or XML');
  return xml;
}

const text = (bytes: Buffer) => bytes.toString('utf8');

/** The first file of a zip, read through its central directory (local headers may defer sizes to a descriptor). */
function unzipFirst(zip: Buffer, limit: number): Buffer {
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0 || end + 22 > zip.length) throw new UnreadableReport('zip without its end record');
  const central = zip.readUInt32LE(end + 16);
  if (central + 46 > zip.length || zip.readUInt32LE(central) !== 0x02014b50)
    throw new UnreadableReport('zip without its central directory');
  const method = zip.readUInt16LE(central + 10);
  const size = zip.readUInt32LE(central + 20);
  const uncompressed = zip.readUInt32LE(central + 24);
  const local = zip.readUInt32LE(central + 42);
  if (uncompressed > limit) throw new UnreadableReport('report too large');
  if (local + 30 > zip.length || zip.readUInt32LE(local) !== 0x04034b50)
    throw new UnreadableReport('zip entry not found');
  const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
  if (start + size > zip.length) throw new UnreadableReport('zip entry cut short');
  const data = zip.subarray(start, start + size);
  if (method !== 0 && method !== 8)
    throw new UnreadableReport(`zip compression method ${method} not supported`);
  const file = method === 0 ? data : inflateRawSync(data, { maxOutputLength: limit });
  if (crc32(file) !== zip.readUInt32LE(central + 16)) throw new UnreadableReport('zip entry damaged (CRC)');
  return file;
}
