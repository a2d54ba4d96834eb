import type { UnsubscribeTokens } from '../domain/broadcasts/unsubscribe-token.ts';
import type { TrackingTokens } from '../domain/emails/tracking.ts';

/**
 * The token factories in `Services` (built once in bin/service.ts from the secret key), named here because their
 * classes live in domain/, which platform/ cannot import. Download links are the blob store's (`services.blobs`).
 */
declare module '../platform/services.ts' {
  interface Tokens {
    /** Open-pixel and click links (GET /t/o/…, /t/c/…). */
    tracking: TrackingTokens;
    /** List-Unsubscribe links and `mailto:` local parts of broadcast emails. */
    unsubscribe: UnsubscribeTokens;
  }
}
