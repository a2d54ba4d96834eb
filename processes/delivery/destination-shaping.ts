import { type ShapingGroup, unmetered } from '../../domain/delivery/shaping-groups.ts';
import { type BounceRule, classifyBounce } from '../../domain/emails/bounce-classes.ts';
import type { DeliveryOutcome } from '../../domain/emails/delivery-attempts.ts';
import { BoundedMap } from '../../platform/bounded-map.ts';
import type { Clock } from '../../platform/clock.ts';
import { createResolver } from '../../platform/dns.ts';
import type { Services } from '../../platform/services.ts';
import { OutboundMta, type OutboundMtaOptions } from './mta/outbound.ts';
import { MtaSts } from './mta-sts/mta-sts.ts';
import { ConnectionSlots } from './shaping/connection-slots.ts';
import { TrafficShaping } from './shaping/traffic-shaping.ts';

/** An unmetered group's hold (pause or back-off) is read again at most this often by a process. */
const HOLD_FRESH_MS = 1000;
const KNOWN_HOLDS = 10_000;

/**
 * Traffic shaping as the delivery look applies it to one destination: its group (by where its MX points), a
 * message admitted or held back until a time, and what the servers said fed back to the group (one observation
 * per distinct reply of an attempt: ten recipients refused alike are one refusal of the message).
 */
export class DestinationShaping {
  readonly #mta: OutboundMta;
  readonly #shaping: TrafficShaping;
  readonly #rules: readonly BounceRule[];
  readonly #clock: Clock;
  readonly #holds = new BoundedMap<string, { until: Promise<Date | null>; readAt: number }>(KNOWN_HOLDS);

  constructor(o: {
    mta: OutboundMta;
    shaping: TrafficShaping;
    bounceRules: readonly BounceRule[];
    clock: Clock;
  }) {
    this.#mta = o.mta;
    this.#shaping = o.shaping;
    this.#rules = o.bounceRules;
    this.#clock = o.clock;
  }

  async groupOf(destination: string): Promise<ShapingGroup> {
    return this.#shaping.groupOf(destination, await this.#mta.mxHostsOf(destination));
  }

  /**
   * Null when a message may go to the group now; else when to look again (ISO). A metered group counts the
   * message in one statement; an unmetered one only has its hold read, at most once a second per process.
   */
  async admit(group: ShapingGroup): Promise<string | null> {
    if (unmetered(group.limits)) {
      const until = await this.#heldUntil(group.name);
      return until && until > this.#clock.now() ? until.toISOString() : null;
    }
    const admission = await this.#shaping.admit(group, 1);
    return admission.ok ? null : admission.until.toISOString();
  }

  #heldUntil(group: string): Promise<Date | null> {
    const now = this.#clock.now().getTime();
    let hold = this.#holds.get(group);
    if (!hold || Math.abs(now - hold.readAt) >= HOLD_FRESH_MS) {
      hold = { until: this.#shaping.heldUntil(group).catch(() => null), readAt: now };
      this.#holds.set(group, hold);
    }
    return hold.until;
  }

  /** What the servers said, as the group's rules read it (a hold it sets is seen here at once). */
  async observe(group: ShapingGroup, decided: DeliveryOutcome[]): Promise<void> {
    this.#holds.delete(group.name);
    const replies = new Map(decided.map((o) => [`${o.result} ${o.smtpResponse}`, o]));
    for (const o of replies.values())
      await this.#shaping.observe(group, {
        ...(o.smtpCode !== undefined && { smtpCode: o.smtpCode }),
        smtpResponse: o.smtpResponse,
        classification: o.classification ?? classifyBounce(o.smtpResponse, this.#rules),
        result: o.result === 'delayed' ? 'deferred' : o.result,
      });
  }
}

/**
 * The delivery process's MTA as the configuration says (MX look-ups or the smarthost, connection slots per shaping
 * group shared by every process, MTA-STS) with its shaping; or a test's own MTA, its connections counted per
 * process only, without MTA-STS.
 */
export function outbound(
  services: Services,
  given?: OutboundMta,
): { mta: OutboundMta; slots?: ConnectionSlots; shaping: DestinationShaping } {
  const c = services.config;
  const slots = given ? undefined : new ConnectionSlots(services);
  const mta =
    given ?? configuredMta(services, { connectionSlots: slots, mtaSts: configuredMtaSts(services) });
  const shaping = new DestinationShaping({
    mta,
    shaping: new TrafficShaping({
      ...services,
      policy: services.policies.shaping,
      smarthost: !!c.SMARTHOST_URL,
    }),
    bounceRules: services.policies.bounceRules,
    clock: services.clock,
  });
  return { mta, slots, shaping };
}

/** An MTA as the configuration says; `extra` adds what the caller shares with it (slots, MTA-STS). */
export function configuredMta(services: Services, extra: Partial<OutboundMtaOptions> = {}): OutboundMta {
  const c = services.config;
  return new OutboundMta({
    dnsServers: c.DNS_SERVERS,
    port: c.OUTBOUND_SMTP_PORT,
    smarthostUrl: c.SMARTHOST_URL,
    log: services.log,
    ...(!c.OUTBOUND_TLS_REJECT_UNAUTHORIZED && { tls: { rejectUnauthorized: false } }),
    ...extra,
  });
}

/** MTA-STS for MX delivery, unless MTA_STS=false or every message goes through the smarthost. */
export function configuredMtaSts(services: Services): MtaSts | undefined {
  const c = services.config;
  if (!c.MTA_STS || c.SMARTHOST_URL) return undefined;
  return new MtaSts({ ...services, resolver: createResolver(c.DNS_SERVERS) });
}
