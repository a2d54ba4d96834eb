/**
 * Postline's outbound MTA, as a library. The delivery process manager (processes/delivery/) calls
 * `OutboundMta.send()` and records each `RecipientOutcome` as an event; retries and back-off live there, not here.
 * See docs/mta.md.
 */
import { hostname } from 'node:os';
import { domainToASCII } from 'node:url';
import type { Logger } from '../../../platform/logger.ts';
import type { MtaStsPort } from '../mta-sts/mta-sts.ts';
import { deliverUnderPolicy } from '../mta-sts/sts-delivery.ts';
import { composeMessage } from './compose.ts';
import {
  type ConnectionSlotPort,
  HostSessions,
  type SessionLimits,
  type SessionSource,
} from './host-sessions.ts';
import { deferredAll, type OutboundMessage, type RecipientOutcome } from './message.ts';
import { MxResolver, type Route } from './mx.ts';
import { parseSmarthost, type Smarthost } from './smarthost.ts';

export interface OutboundMtaOptions {
  /** `host` or `host:port` entries for node:dns Resolver.setServers(); empty means the system resolvers. */
  dnsServers: string[];
  /** Port to connect to on MX hosts (OUTBOUND_SMTP_PORT, 25 in production). */
  port: number;
  /** `smtp://user:pass@host:port` or `smtps://…`: every message goes through this relay, no MX look-ups. */
  smarthostUrl?: string;
  /** Simultaneous connections to one destination (MX host:port or the smarthost). Default 5. */
  maxConnectionsPerDestination?: number;
  /** Connection, greeting, socket and DNS time-out in ms. Default 30 s. */
  timeoutMs?: number;
  log: Logger;
  /**
   * Certificate checks. Default: not verified towards MX hosts (opportunistic TLS, as most MTAs do on port 25),
   * verified towards the smarthost. Tests set `rejectUnauthorized: false` to use a self-signed smarthost.
   */
  tls?: { rejectUnauthorized?: boolean };
  /** EHLO name. Default: the machine's host name. */
  heloName?: string;
  /** Connection slots per shaping group shared by every process (`ConnectionSlots`); unset, per process only. */
  connectionSlots?: ConnectionSlotPort;
  /** Receiving domains' MTA-STS policies and TLS report counts (processes/delivery/mta-sts/); unset, none. */
  mtaSts?: MtaStsPort;
}

/** A send's limits from its destination's shaping group (processes/delivery/shaping/). */
export interface SendLimits {
  /** Connections to each MX host of the destination at most (instead of `maxConnectionsPerDestination`). */
  connections?: number;
  /** Messages (transactions) a connection carries before it is closed. */
  messagesPerConnection?: number;
  /** The shaping group: with `connectionSlots`, its `connections` hold across every process. */
  group?: string;
  /** The egress source the send's connections leave from (processes/delivery/egress/). */
  source?: SessionSource;
}

const DEFAULT_MAX_CONNECTIONS = 5;
const DEFAULT_TIMEOUT_MS = 30_000;

/** The ASCII (punycode) form of the recipient's domain, or null when the address has none. */
function recipientDomain(address: string): string | null {
  const at = address.lastIndexOf('@');
  if (at <= 0 || at === address.length - 1) return null;
  const ascii = domainToASCII(address.slice(at + 1));
  return ascii === '' ? null : ascii.toLowerCase();
}

function asciiAddress(address: string): string {
  const at = address.lastIndexOf('@');
  return `${address.slice(0, at)}@${recipientDomain(address)}`;
}

/**
 * The outbound MTA. `send()` composes and signs the message once, then runs one SMTP transaction per recipient
 * domain (in parallel), reusing pooled connections and never holding more than `maxConnectionsPerDestination`
 * connections to one MX host. Every recipient comes back with an outcome; delivery problems never throw.
 */
export class OutboundMta {
  private readonly log: Logger;
  private readonly resolver: MxResolver;
  private readonly smarthost: Smarthost | null;
  private readonly sessions: HostSessions;
  private readonly mtaSts?: MtaStsPort;
  private readonly inFlight = new Set<Promise<unknown>>();
  private closed = false;

  constructor(options: OutboundMtaOptions) {
    this.log = options.log.child({ component: 'mta' });
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.resolver = new MxResolver({ dnsServers: options.dnsServers, timeoutMs });
    this.smarthost = options.smarthostUrl ? parseSmarthost(options.smarthostUrl) : null;
    this.mtaSts = options.mtaSts;
    this.sessions = new HostSessions({
      port: options.port,
      smarthost: this.smarthost,
      maxPerDestination: options.maxConnectionsPerDestination ?? DEFAULT_MAX_CONNECTIONS,
      timeoutMs,
      heloName: options.heloName ?? hostname(),
      rejectUnauthorized: options.tls?.rejectUnauthorized ?? this.smarthost !== null,
      log: this.log,
      slots: options.connectionSlots,
      ca: options.mtaSts?.ca,
    });
  }

  /**
   * Delivers `message` to `recipients` (its to, cc and bcc, or a subset on retry). One outcome per recipient.
   * `withinMs`: nothing of the send reaches a server after it: no transaction starts later (its recipients are
   * deferred), and one still running is cut (deferred too, as a connection lost during the transaction).
   * `limits`: the connection limits of the recipients' shaping group (one group per send).
   */
  async send(
    message: OutboundMessage,
    recipients: string[],
    options: { withinMs?: number; limits?: SendLimits } = {},
  ): Promise<RecipientOutcome[]> {
    if (this.closed) throw new Error('the MTA is closed');
    const endAt = Date.now() + (options.withinMs ?? Number.POSITIVE_INFINITY);
    const limits = {
      connections: options.limits?.connections,
      usesPerConnection: options.limits?.messagesPerConnection,
      group: options.limits?.group,
      source: options.limits?.source,
    };
    const work = this.deliver(message, recipients, endAt, limits);
    this.inFlight.add(work);
    try {
      return await work;
    } finally {
      this.inFlight.delete(work);
    }
  }

  /** Stops taking work, waits for sends in flight, closes every pooled connection. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.inFlight]);
    this.sessions.close();
    await this.mtaSts?.flush();
  }

  /**
   * The MX host names of a domain, most preferred first (equal preferences by name), for its shaping group
   * (`TrafficShaping.groupOf`); empty when the domain has no route (its send bounces or defers anyway) or a
   * smarthost takes every message.
   */
  async mxHostsOf(domain: string): Promise<string[]> {
    if (this.smarthost) return [];
    const route = await this.resolver.route(domain);
    if (route.kind !== 'hosts') return [];
    return [...route.hosts]
      .sort((a, b) => a.priority - b.priority || a.name.localeCompare(b.name))
      .map((h) => h.name.toLowerCase());
  }

  private async deliver(
    message: OutboundMessage,
    recipients: string[],
    endAt: number,
    limits: SessionLimits,
  ): Promise<RecipientOutcome[]> {
    const unique = [...new Map(recipients.map((r) => [r.toLowerCase(), r])).values()];
    const outcomes = new Map<string, RecipientOutcome>();
    const record = (o: RecipientOutcome) => outcomes.set(o.recipient.toLowerCase(), o);

    let raw: Buffer;
    try {
      raw = await composeMessage(message);
    } catch (err) {
      this.log.error({ err, messageId: message.messageId }, 'could not compose message');
      for (const o of deferredAll(unique, `local error: ${(err as Error).message}`)) record(o);
      return recipients.map((r) => ({
        ...(outcomes.get(r.toLowerCase()) as RecipientOutcome),
        recipient: r,
      }));
    }

    const byDomain = new Map<string, string[]>();
    for (const recipient of unique) {
      const domain = recipientDomain(recipient);
      if (domain === null) {
        record({
          recipient,
          result: 'bounced',
          smtpCode: 553,
          smtpResponse: '553 5.1.3 invalid recipient address',
        });
        continue;
      }
      // Through a smarthost every recipient shares one transaction.
      const group = this.smarthost ? '' : domain;
      byDomain.set(group, [...(byDomain.get(group) ?? []), recipient]);
    }

    await Promise.all(
      [...byDomain].map(async ([domain, rcpts]) => {
        try {
          for (const o of await this.deliverToDomain(domain, rcpts, message, raw, endAt, limits)) record(o);
        } catch (err) {
          // A bug or a close() racing the send must not lose recipients: they are retried later.
          this.log.error({ err, domain }, 'delivery failed unexpectedly');
          for (const o of deferredAll(rcpts, `local error: ${(err as Error).message}`)) record(o);
        }
      }),
    );
    return recipients.map((r) => ({ ...(outcomes.get(r.toLowerCase()) as RecipientOutcome), recipient: r }));
  }

  private async deliverToDomain(
    domain: string,
    recipients: string[],
    message: OutboundMessage,
    raw: Buffer,
    endAt: number,
    limits: SessionLimits,
  ): Promise<RecipientOutcome[]> {
    const route: Route = this.smarthost
      ? {
          kind: 'hosts',
          hosts: [{ name: this.smarthost.host, priority: 0, addresses: [this.smarthost.host] }],
        }
      : await this.resolver.route(domain);
    if (route.kind === 'bounce') {
      this.log.info({ domain, reason: route.reason }, 'recipient domain does not accept mail');
      return recipients.map((recipient) => ({
        recipient,
        result: 'bounced',
        smtpCode: route.smtpCode,
        smtpResponse: route.reason,
      }));
    }
    if (route.kind === 'defer') {
      this.log.warn({ domain, reason: route.reason }, 'MX lookup failed, deferring');
      return deferredAll(recipients, route.reason);
    }

    // RCPT TO carries the ASCII (punycode) domain; outcomes go back under the caller's spelling.
    const envelopeTo = recipients.map(asciiAddress);
    const original = new Map(envelopeTo.map((a, i) => [a.toLowerCase(), recipients[i]]));
    const delivered = await deliverUnderPolicy({
      domain,
      hosts: route.hosts,
      sts: this.smarthost ? undefined : this.mtaSts,
      transact: async (host, verifiedTls) => {
        const attempt = await this.sessions.transact(host, envelopeTo, message, raw, endAt, {
          ...limits,
          ...(verifiedTls && { verifiedTls }),
        });
        if (!attempt.outcomes)
          this.log.warn(
            { domain, mx: host.name, error: attempt.error },
            'MX host unreachable, trying the next one',
          );
        return attempt;
      },
    });
    if (delivered.outcomes)
      return delivered.outcomes.map((o) => ({
        ...o,
        recipient: original.get(o.recipient.toLowerCase()) ?? o.recipient,
      }));
    return deferredAll(recipients, delivered.lastError);
  }
}
