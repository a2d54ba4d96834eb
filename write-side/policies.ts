import type { BounceRule } from '../domain/emails/bounce-classes.ts';

/** The operator's policies in `Services` (parsed once in bin/service.ts), named here because their types live in domain/. */
declare module '../platform/services.ts' {
  interface Policies {
    /** BOUNCE_RULES_FILE's rules, tried before the defaults (docs/bounces.md). */
    bounceRules: readonly BounceRule[];
  }
}
