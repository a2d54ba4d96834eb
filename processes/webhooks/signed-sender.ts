import { BoundedMap } from '../../platform/bounded-map.ts';
import type { Claimed } from './deliveries.ts';
import { type SendOutcome, WebhookSender } from './http-sender.ts';
import { signatureHeader } from './signer.ts';

/**
 * Signs and POSTs deliveries: each signed with its endpoint's secret (and the replaced ones whose rotation
 * overlap has not ended) at the moment it is sent. Its HTTP client (keep-alive connections per endpoint) is made
 * for the first request and closed by `close`.
 */
export class SignedSender {
  readonly #options: ConstructorParameters<typeof WebhookSender>[0];
  readonly #openSecret: (sealed: string) => string;
  #sender?: WebhookSender;
  /** Endpoint secrets opened, by their sealed text: opening costs a decryption per delivery otherwise. */
  readonly #secrets = new BoundedMap<string, string>(1000);

  constructor(
    options: ConstructorParameters<typeof WebhookSender>[0],
    openSecret: (sealed: string) => string,
  ) {
    this.#options = options;
    this.#openSecret = openSecret;
  }

  /** Signs and POSTs one delivery; resolves with the outcome, never rejects. */
  async send(row: Claimed, now: Date): Promise<SendOutcome> {
    const timestamp = Math.floor(now.getTime() / 1000);
    // Encoded once: signed and sent as these bytes.
    const bytes = Buffer.from(row.body);
    let signature: string;
    try {
      // Newest first: the current secret, then each replaced one whose overlap has not ended.
      const secrets = [
        row.sealed_secret,
        ...row.previous_secrets
          .filter((p) => Date.parse(p.valid_until) > now.getTime())
          .map((p) => p.sealed_secret),
      ].map((sealed) => this.#open(sealed));
      signature = signatureHeader(secrets, row.id, timestamp, bytes);
    } catch (error) {
      return { status: null, excerpt: null, error: `not signed: ${(error as Error).message}` };
    }
    this.#sender ??= new WebhookSender(this.#options);
    return this.#sender.post(
      row.url,
      {
        'content-type': 'application/json',
        'user-agent': 'Postline-Webhooks/1',
        'webhook-id': row.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signature,
      },
      bytes,
    );
  }

  /** Closes the HTTP client's connections; a later `send` makes a new one. */
  async close(): Promise<void> {
    await this.#sender?.close();
    this.#sender = undefined;
  }

  #open(sealed: string): string {
    let plain = this.#secrets.get(sealed);
    if (!plain) {
      plain = this.#openSecret(sealed);
      this.#secrets.set(sealed, plain);
    }
    return plain;
  }
}
