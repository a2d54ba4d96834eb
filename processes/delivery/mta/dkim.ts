import { createHash, createPrivateKey, type KeyObject, sign } from 'node:crypto';
import { BoundedMap } from '../../../platform/bounded-map.ts';
import type { DkimKey } from './message.ts';

/**
 * DKIM signing (RFC 6376, relaxed/relaxed; RFC 8463 for Ed25519). Written here rather than taken from a library
 * for two reasons: the private-key operation runs on libuv's thread pool (`crypto.sign` with a callback) instead
 * of blocking the event loop for ~2 ms per message, and the parsed key is kept instead of read from PEM each time.
 */

/** Headers covered by the signature, each instance present. */
const SIGNED_HEADERS = [
  'from',
  'sender',
  'reply-to',
  'subject',
  'date',
  'message-id',
  'to',
  'cc',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'content-id',
  'content-description',
  'list-id',
  'list-unsubscribe',
  'list-unsubscribe-post',
  'in-reply-to',
  'references',
];
/** Named once more in h= than present (RFC 6376 §8.15): a From added in transit then fails verification. */
const OVERSIGNED = 'from';

/** Parsed keys by PEM; a handful of sending domains per process, so a bound suffices. */
const keys = new BoundedMap<string, KeyObject>(1000);

function privateKey(pem: string): KeyObject {
  let key = keys.get(pem);
  if (!key) {
    key = createPrivateKey(pem);
    keys.set(pem, key);
  }
  return key;
}

/** RFC 6376 §3.4.2: lower-case name, unfolded, runs of white space as one space, none at the ends. */
const relaxedHeader = (field: string) => {
  const colon = field.indexOf(':');
  const value = field
    .slice(colon + 1)
    .replace(/\r?\n(?=[ \t])/g, '')
    .replace(/[ \t]+/g, ' ')
    .trim();
  return `${field.slice(0, colon).trim().toLowerCase()}:${value}`;
};

/** RFC 6376 §3.4.4 over the body's bytes (as latin1, one char per byte): the base64 SHA-256 of its canonical form. */
function relaxedBodyHash(body: string): string {
  const hash = createHash('sha256');
  let chunk = '';
  let emptyLines = 0;
  for (const raw of body.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const canonical = /[ \t]/.test(line) ? line.replace(/[ \t]+/g, ' ').replace(/ $/, '') : line;
    if (canonical === '') {
      emptyLines++;
      continue;
    }
    chunk += `${'\r\n'.repeat(emptyLines)}${canonical}\r\n`;
    emptyLines = 0;
    if (chunk.length > 65_536) {
      hash.update(chunk, 'latin1');
      chunk = '';
    }
  }
  return hash.update(chunk, 'latin1').digest('base64');
}

/** The header block's fields (continuation lines joined to theirs), top to bottom. */
const headerFields = (block: string) => block.split(/\r?\n(?![ \t])/).filter((f) => f.includes(':'));

/** The fields to sign, each name's instances from the bottom up, and the h= list naming them. */
function signedFields(fields: string[]): { names: string[]; fields: string[] } {
  const byName = new Map<string, string[]>();
  for (const field of fields) {
    const name = field.slice(0, field.indexOf(':')).trim().toLowerCase();
    byName.set(name, [...(byName.get(name) ?? []), field]);
  }
  const names: string[] = [];
  const signed: string[] = [];
  for (const name of SIGNED_HEADERS) {
    for (const field of (byName.get(name) ?? []).reverse()) {
      names.push(name);
      signed.push(field);
    }
  }
  names.push(OVERSIGNED);
  return { names, fields: signed };
}

const signAsync = (algorithm: string | null, data: Buffer, key: KeyObject) =>
  new Promise<Buffer>((resolve, reject) =>
    sign(algorithm, data, key, (err, signature) => (err ? reject(err) : resolve(signature))),
  );

/**
 * Prepends a DKIM-Signature (rsa-sha256 or ed25519-sha256 per the key, relaxed/relaxed) to a composed message.
 * `signTime` is the message's own Date, and both algorithms are deterministic, so composing the same email twice
 * gives the same bytes.
 */
export async function signMessage(raw: Buffer, dkim: DkimKey, signTime: Date): Promise<Buffer> {
  const text = raw.toString('latin1');
  const split = text.search(/\r?\n\r?\n/);
  const head = split < 0 ? text : text.slice(0, split);
  const body = split < 0 ? '' : text.slice(split).replace(/^\r?\n\r?\n/, '');
  const key = privateKey(dkim.privateKey);
  const type = key.asymmetricKeyType;
  if (type !== 'rsa' && type !== 'ed25519')
    throw new Error(`DKIM signing failed for ${dkim.domainName}: unsupported key type ${type}`);

  const { names, fields } = signedFields(headerFields(head));
  const tags = [
    'v=1',
    `a=${type}-sha256`,
    'c=relaxed/relaxed',
    `d=${dkim.domainName}`,
    `s=${dkim.keySelector}`,
    `t=${Math.floor(signTime.getTime() / 1000)}`,
    `bh=${relaxedBodyHash(body)}`,
    `h=${names.join(':')}`,
  ];
  const unsigned = `DKIM-Signature: ${tags.join(';\r\n ')};\r\n b=`;
  // Each signed field with its CRLF, then this signature's own field, b= empty, without one.
  const canonical = Buffer.from([...fields, unsigned].map(relaxedHeader).join('\r\n'), 'latin1');
  // RFC 8463: Ed25519 signs the SHA-256 of the canonical header fields (PureEdDSA over the hash).
  const signature =
    type === 'rsa'
      ? await signAsync('sha256', canonical, key)
      : await signAsync(null, createHash('sha256').update(canonical).digest(), key);
  const b = signature
    .toString('base64')
    .replace(/.{1,72}/g, (part, at) => (at === 0 ? part : `\r\n ${part}`));
  return Buffer.concat([Buffer.from(`${unsigned}${b}\r\n`, 'latin1'), raw]);
}
