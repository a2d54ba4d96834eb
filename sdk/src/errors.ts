/** The body of every error Postline answers: `{error: {type, message, code}}` (its catalogue: docs/api.md). */
export interface ErrorBody {
  error: { type: string; message: string; code: string };
  [extra: string]: unknown;
}

/**
 * An answer other than 2xx. `code` is the exact cause (`domain_not_verified`, `rate_limit_exceeded`, …), `type`
 * its family; `body` holds what else came with it (the `id` a 503 `projection_timeout` saved, for example).
 */
export class PostlineError extends Error {
  readonly status: number;
  readonly type: string;
  readonly code: string;
  readonly body: ErrorBody;
  constructor(status: number, body: ErrorBody) {
    super(body.error.message);
    this.name = 'PostlineError';
    this.status = status;
    this.type = body.error.type;
    this.code = body.error.code;
    this.body = body;
  }
}

/** The signature of a webhook delivery does not verify (wrong secret, tampered body, too old). */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}
