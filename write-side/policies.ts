import type { EgressPolicy } from '../domain/delivery/egress-sources.ts';
import type { ShapingPolicy } from '../domain/delivery/shaping-groups.ts';
import type { BounceRule } from '../domain/emails/bounce-classes.ts';

/** The operator's policies in `Services` (parsed once in bin/service.ts), named here because their types live in domain/. */
declare module '../platform/services.ts' {
  interface Policies {
    /** BOUNCE_RULES_FILE's rules, tried before the defaults (docs/bounces.md). */
    bounceRules: readonly BounceRule[];
    /** The shipped shaping groups with SHAPING_FILE's over them (docs/deliverability.md, "Traffic shaping"). */
    shaping: ShapingPolicy;
    /** SOURCES_FILE's egress sources, pools and warm-up; the machine's one source without it. */
    egress: EgressPolicy;
  }
}
