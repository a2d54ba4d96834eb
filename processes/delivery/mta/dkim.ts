import { dkimSign } from 'mailauth';
import type { DkimKey } from './outbound.ts';

/** Headers covered by the signature (when present). From is listed twice so that a second From cannot be added. */
const SIGNED_HEADERS = [
  'from',
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

/**
 * Prepends a DKIM-Signature (rsa-sha256 or ed25519 per the key, relaxed/relaxed) to a composed message.
 * `signTime` is the message's own Date so that composing the same email twice gives the same bytes.
 */
export async function signMessage(raw: Buffer, key: DkimKey, signTime: Date): Promise<Buffer> {
  const signature = { signingDomain: key.domainName, selector: key.keySelector, privateKey: key.privateKey };
  const result = await dkimSign(raw, {
    ...signature,
    // mailauth signs once per entry of signatureData and ignores the top-level key fields.
    signatureData: [signature],
    canonicalization: 'relaxed/relaxed',
    headerList: SIGNED_HEADERS,
    signTime,
  });
  if (result.errors.length > 0 || !result.signatures.startsWith('DKIM-Signature:')) {
    throw new Error(
      `DKIM signing failed for ${key.domainName}: ${result.errors.map((e) => e.message).join('; ')}`,
    );
  }
  return Buffer.concat([Buffer.from(result.signatures), raw]);
}
