import { createHmac, type KeyObject, timingSafeEqual } from 'node:crypto';
import { purposeKey } from '../../platform/crypto.ts';
import { base32, idShape } from '../../platform/ids.ts';

const EMAIL_ID = idShape('em');

/**
 * Unsubscribe tokens: `<email id>-<mac>`, the mac an HMAC of the id under a key derived from POSTLINE_SECRET_KEY.
 * The email names its broadcast, contact and topic, so a token unsubscribes exactly that contact and cannot be
 * made for another. Lower-case letters and digits only, and short enough for an address's local part (64
 * characters): the same token serves the URL and the `mailto:` of List-Unsubscribe, whose local part a mail
 * server may lower-case.
 */
export class UnsubscribeTokens {
  readonly #key: KeyObject;

  constructor(secretKeyBase64: string) {
    this.#key = purposeKey(secretKeyBase64, 'postline unsubscribe');
  }

  #mac(emailId: string): string {
    return base32(createHmac('sha256', this.#key).update(emailId).digest().subarray(0, 10));
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
