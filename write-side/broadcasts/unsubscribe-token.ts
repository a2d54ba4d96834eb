import { createHash, hash, timingSafeEqual } from 'node:crypto';
import { base32 } from '../../platform/ids.ts';

const EMAIL_ID = /^em_[0-9a-z]{1,60}$/;

/**
 * Unsubscribe tokens: `<email id>-<mac>`, the mac an HMAC of the id under a key derived from POSTLINE_SECRET_KEY.
 * The email names its broadcast, contact and topic, so a token unsubscribes exactly that contact and cannot be
 * made for another. Lower-case letters and digits only, and short enough for an address's local part (64
 * characters): the same token serves the URL and the `mailto:` of List-Unsubscribe, whose local part a mail
 * server may lower-case.
 */
export class UnsubscribeTokens {
  /** The HMAC key XOR the inner and outer pads (RFC 2104), for HMAC-SHA-256 as two one-shot hashes. */
  readonly #innerPad: Buffer;
  readonly #outerPad: Buffer;

  constructor(secretKeyBase64: string) {
    const key = createHash('sha256')
      .update('postline unsubscribe\0')
      .update(Buffer.from(secretKeyBase64, 'base64'))
      .digest();
    const block = Buffer.alloc(64);
    key.copy(block);
    this.#innerPad = Buffer.from(block.map((b) => b ^ 0x36));
    this.#outerPad = Buffer.from(block.map((b) => b ^ 0x5c));
  }

  /**
   * HMAC-SHA-256 of the id. Written out (RFC 2104) rather than `createHmac`: a broadcast signs one token per
   * recipient, and preparing the key object for each `createHmac` was the expansion's largest cost.
   */
  #mac(emailId: string): string {
    const inner = hash('sha256', Buffer.concat([this.#innerPad, Buffer.from(emailId)]), 'buffer');
    return base32(hash('sha256', Buffer.concat([this.#outerPad, inner]), 'buffer').subarray(0, 10));
  }

  sign(emailId: string): string {
    return `${emailId}-${this.#mac(emailId)}`;
  }

  /** The email id a token was signed for, or null. */
  verify(token: string): string | null {
    const [emailId, mac, ...rest] = token.toLowerCase().split('-');
    if (rest.length > 0 || !emailId || !mac || !EMAIL_ID.test(emailId)) return null;
    const expected = this.#mac(emailId);
    if (mac.length !== expected.length || !timingSafeEqual(Buffer.from(mac), Buffer.from(expected)))
      return null;
    return emailId;
  }
}
