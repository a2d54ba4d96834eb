import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { BoundedMap } from '../../platform/bounded-map.ts';

/** Decoded keys by secret: building a key from base64 costs several times the HMAC itself. */
const keys = new BoundedMap<string, KeyObject>(1000);

function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    key = createSecretKey(Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64'));
    keys.set(secret, key);
  }
  return key;
}

/**
 * Standard Webhooks signatures: `v1,` + base64 HMAC-SHA256 over `<id>.<timestamp>.<body>`, keyed by the secret's
 * base64-decoded bytes (the text after `whsec_`), not by the text itself. The body may be given as the UTF-8 bytes
 * that are sent (the dispatcher's case): it is then neither encoded again nor copied into one long string.
 */
export function sign(secret: string, id: string, timestamp: number, body: string | Uint8Array): string {
  return `v1,${createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.`).update(body).digest('base64')}`;
}

/** The `webhook-signature` header: one signature per valid secret (several during rotation overlaps), space-separated. */
export const signatureHeader = (
  secrets: string[],
  id: string,
  timestamp: number,
  body: string | Uint8Array,
): string => secrets.map((s) => sign(s, id, timestamp, body)).join(' ');
