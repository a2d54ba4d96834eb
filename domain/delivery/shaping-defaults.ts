import type { ShapingPolicy } from './shaping-groups.ts';

const MINUTE = 60_000;

/**
 * The groups Postline ships, with conservative limits for a sender whose address has no long history, and the
 * throttling replies each provider documents (docs/deliverability.md lists them with their sources). A reply no
 * rule names still backs the group off when its class is `rate_limited` (domain/emails/bounce-classes.ts).
 */
export const DEFAULT_SHAPING: ShapingPolicy = {
  // A destination no group names is not metered (as Postfix's default): only its holds and connections apply.
  default: { connections: 5, messagesPerConnection: 100, perMinute: null, perHour: null, replies: [] },
  groups: [
    {
      name: 'google',
      mx: ['*.google.com', '*.googlemail.com'],
      connections: 5,
      messagesPerConnection: 50,
      perMinute: 200,
      perHour: 6_000,
      replies: [
        // 421 4.7.28 "… has detected an unusual rate of unsolicited mail …: temporarily rate limited".
        { status: '4.7.28', action: 'pause', forMs: 15 * MINUTE },
        // 421 4.7.0 "Our system has detected an unusual rate of unsolicited mail …".
        { match: 'unusual rate', action: 'halve' },
      ],
    },
    {
      name: 'microsoft',
      mx: ['*.outlook.com', '*.protection.outlook.com', '*.hotmail.com'],
      connections: 4,
      messagesPerConnection: 20,
      perMinute: 120,
      perHour: 3_000,
      replies: [
        // 451 4.7.500 "Server busy. Please try again later from [ip]. (S77714)".
        { status: '4.7.500', action: 'pause', forMs: 10 * MINUTE },
        // 451 4.7.650 / 4.7.651 "… has been temporarily rate limited due to IP reputation".
        { match: 'temporarily rate limited', action: 'halve' },
        // 421 RP-001 / RP-002 / RP-003: rate, connection-rate and connection-count limits of Outlook.com.
        { match: '\\bRP-00[1-3]\\b', action: 'halve' },
      ],
    },
    {
      name: 'yahoo',
      mx: ['*.yahoodns.net', '*.yahoo.com', '*.aol.com'],
      connections: 5,
      messagesPerConnection: 20,
      perMinute: 120,
      perHour: 3_000,
      replies: [
        // 421 4.7.0 [TSS09] "All messages from ip will be permanently deferred; Retrying will NOT succeed."
        { match: '\\[TSS09\\]', action: 'pause', forMs: 60 * MINUTE },
        // 421 4.7.0 [TSS04] "Messages from ip temporarily deferred due to unexpected volume or user complaints".
        { match: '\\[TSS04\\]', action: 'halve' },
        // 421 4.7.0 [TS01] / [TS02] / [TS03] "Messages from ip temporarily deferred …".
        { match: '\\[TS0[1-3]\\]', action: 'pause', forMs: 30 * MINUTE },
      ],
    },
    {
      name: 'icloud',
      mx: ['*.icloud.com', '*.me.com'],
      connections: 3,
      messagesPerConnection: 20,
      perMinute: 60,
      perHour: 1_500,
      replies: [{ match: 'too many (connections|messages)|rate limit', action: 'halve' }],
    },
    {
      name: 'gmx-webde',
      mx: ['*.gmx.net', '*.web.de', '*.kundenserver.de'],
      connections: 3,
      messagesPerConnection: 20,
      perMinute: 60,
      perHour: 1_500,
      replies: [
        // 421 "… Too many connections from your IP" / "too many messages".
        { match: 'too many (connections|messages)', action: 'halve' },
        // 421 4.7.0 "… temporarily deferred" / "Service not available" after a burst.
        { match: 'temporarily deferred', action: 'pause', forMs: 15 * MINUTE },
      ],
    },
  ],
};
