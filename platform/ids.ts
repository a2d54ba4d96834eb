import { randomBytes, randomFillSync } from 'node:crypto';

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';
let lastTime = 0;
let lastRandom: number[] = [];

/** Randomness for ids, drawn 4 KiB at a time: a call into OpenSSL for every 256 milliseconds that make ids. */
const pool = Buffer.alloc(4096);
let pooled = 0;

function randomDigits(count: number): number[] {
  if (pooled < count) {
    randomFillSync(pool);
    pooled = pool.length;
  }
  const digits: number[] = [];
  for (let i = 0; i < count; i++) digits.push(pool[--pooled] & 31);
  return digits;
}

/** Bytes as lower-case Crockford base32, 5 bits a character (10 bytes: 16 characters, as a ULID's random part). */
export function base32(bytes: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const b of bytes) {
    value = ((value << 8) | b) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      out += CROCKFORD[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return bits > 0 ? out + CROCKFORD[(value << (5 - bits)) & 31] : out;
}

/** The first 10 characters of a ULID body: the time in milliseconds. */
export function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = CROCKFORD[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

/** The shape of the ids `newId(prefix)` makes, as a request or a token may give them (`idShape('top')`). */
export const idShape = (prefix: string) => new RegExp(`^${prefix}_[0-9a-z]{1,60}$`);

/**
 * A prefixed, lexicographically time-ordered id (ULID body, lower case).
 * Monotonic within the process so ids created in the same millisecond still sort in creation order,
 * which is what cursor pagination relies on.
 */
export function newId(prefix: string, at: number = Date.now()): string {
  if (at <= lastTime) {
    for (let i = lastRandom.length - 1; i >= 0; i--) {
      if (lastRandom[i] < 31) {
        lastRandom[i]++;
        break;
      }
      lastRandom[i] = 0;
    }
    at = lastTime;
  } else {
    lastTime = at;
    lastRandom = randomDigits(16);
  }
  return `${prefix}_${encodeTime(at)}${lastRandom.map((n) => CROCKFORD[n]).join('')}`;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Random base62 text, for secrets such as API keys. */
export function randomToken(length: number): string {
  const bytes = randomBytes(length * 2);
  let out = '';
  for (const b of bytes) {
    if (b < 248) out += BASE62[b % 62];
    if (out.length === length) return out;
  }
  return out + randomToken(length - out.length);
}
