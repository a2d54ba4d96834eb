import { isIP } from 'node:net';
import { BoundedMap } from '../../../platform/bounded-map.ts';
import type { Logger } from '../../../platform/logger.ts';
import { DestinationPool, type UseLimits } from './destination-limiter.ts';
import { deferredAll, type OutboundMessage, type RecipientOutcome } from './message.ts';
import type { MxHost } from './mx.ts';
import type { Smarthost } from './smarthost.ts';
import { dataAccepted, describeError, SmtpSession, starttlsFailed } from './smtp-client.ts';

/** Connection slots shared across processes per shaping group (processes/delivery/shaping/connection-slots.ts). */
export interface ConnectionSlotPort {
  acquire(group: string, connections: number): Promise<{ release(): Promise<void> } | null>;
}

/** An egress source a connection leaves from: its local address (bound) and the name it says in EHLO. */
export interface SessionSource {
  address?: string;
  helo?: string;
}

/**
 * A send's limits: the pool's, the group whose connection slots its connections hold, the egress source its
 * connections leave from (a pooled connection serves only sends of its own source), and `verifiedTls` (an
 * MTA-STS policy's host): STARTTLS required and the certificate verified for the host name, on connections of
 * their own.
 */
export type SessionLimits = UseLimits & { group?: string; source?: SessionSource; verifiedTls?: boolean };

/** While a group's slots are all held, a free one is looked for this often (until the connection time-out). */
const SLOT_POLL_MS = 250;
const KNOWN_DESTINATIONS = 10_000;

/** No slot of the group came free in time: no server was asked, and the next MX host would wait alike. */
class SlotsInUse extends Error {}

export interface HostSessionOptions {
  /** Port to connect to on MX hosts; the smarthost's own otherwise. */
  port: number;
  smarthost: Smarthost | null;
  /** Simultaneous connections to one destination (MX host:port or the smarthost). */
  maxPerDestination: number;
  timeoutMs: number;
  heloName: string;
  /** Whether certificates are verified (see OutboundMtaOptions.tls). */
  rejectUnauthorized: boolean;
  log: Logger;
  /** When set, a send with a group and `connections` opens a connection only while it holds one of its slots. */
  slots?: ConnectionSlotPort;
  /** CAs trusted for verified TLS (`verifiedTls`); unset, Node's own. */
  ca?: string[];
}

/**
 * SMTP sessions to the hosts of a route, pooled per destination: a transaction runs on a pooled connection, and
 * never more than `maxPerDestination` connections go to one host.
 */
export class HostSessions {
  readonly #o: HostSessionOptions;
  readonly #pool: DestinationPool<SmtpSession>;
  /** The shaping group of each pooled destination (host, or source and host) that sends named one. */
  readonly #groups = new BoundedMap<string, string>(KNOWN_DESTINATIONS);

  constructor(o: HostSessionOptions) {
    this.#o = o;
    this.#pool = new DestinationPool({
      maxPerDestination: o.maxPerDestination,
      idleMs: Math.min(5_000, Math.floor(o.timeoutMs / 2)),
    });
  }

  /** Closes every pooled connection. */
  close(): void {
    this.#pool.close();
  }

  /**
   * Runs the transaction on a pooled connection to `host`. `error` (and no outcomes) when no connection could
   * be opened, so the caller moves on to the next MX host. A reused connection that turns out to be dead before
   * the server accepted DATA gets one more try on a fresh one; a connection lost during the transaction otherwise
   * (once DATA was accepted the outcome is unknown) defers every recipient. A shaping group without a free
   * connection slot in time, or a pool without a free connection before `endAt`, defers them too, not counted as
   * an attempt. Past `endAt` no transaction starts (every recipient deferred), and one still running is cut.
   * `limits` (the destination's shaping group's) caps the connections to this host and the transactions each
   * connection runs.
   */
  async transact(
    host: MxHost,
    recipients: string[],
    message: OutboundMessage,
    raw: Buffer,
    endAt: number,
    limits: SessionLimits = {},
  ): Promise<{ outcomes: RecipientOutcome[] } | { outcomes?: undefined; error: string }> {
    const port = this.#o.smarthost?.port ?? this.#o.port;
    const source = limits.source?.address;
    const key = `${source ? `${source}>` : ''}${host.name.toLowerCase()}:${port}${limits.verifiedTls ? ' verified' : ''}`;
    const timeUp = () => ({
      outcomes: deferredAll(
        recipients,
        'local: the attempt reached its time limit before its transaction could start',
      ),
    });
    // No server was asked, only a connection waited for: not counted as an attempt.
    const unasked = (reason: string) => ({
      outcomes: deferredAll(recipients, `local: ${reason}; not counted as an attempt`, { attempted: false }),
    });
    if (limits.group) this.#groups.set(key, limits.group);
    for (let attempt = 0; ; attempt++) {
      if (Date.now() >= endAt) return timeUp();
      let opened = false;
      let inTransaction = false;
      let reused = false;
      try {
        const outcomes = await this.#pool.use(
          key,
          () => {
            opened = true;
            return this.#openInSlot(host, port, limits, endAt, key);
          },
          async (session) => {
            // A connection that came too late (the pool was busy) goes back unused.
            if (Date.now() >= endAt) return { value: null, reuse: true };
            inTransaction = true;
            reused = !opened;
            const replies = await session.transaction(message.envelopeFrom, recipients, raw, endAt);
            return { value: replies.map((r) => ({ ...r, mx: host.name, tls: session.secure })), reuse: true };
          },
          limits,
        );
        if (!outcomes)
          return unasked(`no connection to ${host.name} came free within the attempt's time limit`);
        this.#o.log.debug({ mx: host.name, recipients: recipients.length, reused }, 'transaction done');
        return { outcomes };
      } catch (err) {
        if (err instanceof SlotsInUse) return unasked(err.message);
        if (!inTransaction) return { error: describeError(err) };
        // A stale pooled connection fails before DATA is accepted, with nothing of the message handed over; once
        // it was, the server may have stored it: deferred as on a fresh connection, never sent twice here.
        if (reused && attempt === 0 && !dataAccepted(err) && Date.now() < endAt) continue;
        const reason = `connection to ${host.name} lost during the transaction: ${describeError(err)}`;
        this.#o.log.warn(
          { mx: host.name, error: describeError(err) },
          'connection lost during the transaction',
        );
        return { outcomes: deferredAll(recipients, reason, { mx: host.name }) };
      }
    }
  }

  /**
   * Opens a session while holding one of the group's connection slots, given back when the session closes;
   * waits for a free slot until the connection time-out (or `endAt`), then throws SlotsInUse.
   */
  async #openInSlot(
    host: MxHost,
    port: number,
    limits: SessionLimits,
    endAt: number,
    key: string,
  ): Promise<SmtpSession> {
    const { slots } = this.#o;
    const { group, connections } = limits;
    const verified = limits.verifiedTls ?? false;
    if (!slots || !group || !connections) return this.#open(host, port, verified, limits.source);
    const giveUpAt = Math.min(endAt, Date.now() + this.#o.timeoutMs);
    for (;;) {
      const lease = await slots.acquire(group, connections);
      if (lease) {
        try {
          const session = await this.#open(host, port, verified, limits.source);
          session.onClose(() => void lease.release());
          return session;
        } catch (err) {
          await lease.release();
          throw err;
        }
      }
      // A slot held by an idle connection to another destination of the group (another MX host, another
      // egress source) is freed for this one rather than waiting for its idle time-out.
      this.#pool.closeIdle((k) => k !== key && this.#groups.get(k) === group);
      if (Date.now() + SLOT_POLL_MS >= giveUpAt)
        throw new SlotsInUse(`all ${connections} connections of the shaping group ${group} are in use`);
      await new Promise((resolve) => setTimeout(resolve, SLOT_POLL_MS));
    }
  }

  /**
   * Opens a session to the first of the host's addresses that answers. Towards an MX, TLS is opportunistic
   * (certificates are not verified unless `tls.rejectUnauthorized` says so) and a failed STARTTLS handshake is
   * retried once in plain text, as Postfix's `may` level does; towards a smarthost, or `verified` (MTA-STS), TLS
   * failures are errors.
   */
  async #open(
    host: MxHost,
    port: number,
    verified: boolean,
    source: SessionSource = {},
  ): Promise<SmtpSession> {
    const options = {
      port,
      servername: host.name,
      implicitTls: this.#o.smarthost?.implicitTls ?? false,
      auth: this.#o.smarthost?.auth,
      timeoutMs: this.#o.timeoutMs,
      heloName: source.helo ?? this.#o.heloName,
      ...(source.address && { localAddress: source.address }),
      tls: verified
        ? { rejectUnauthorized: true, ca: this.#o.ca }
        : { rejectUnauthorized: this.#o.rejectUnauthorized },
      requireTls: verified,
      log: this.#o.log,
    };
    let last: unknown = new Error(`no address for ${host.name}`);
    for (const address of host.addresses) {
      // A bound source reaches only addresses of its own family (an IPv4 source no IPv6 MX address).
      if (source.address && isIP(address) && isIP(address) !== isIP(source.address)) continue;
      try {
        return await SmtpSession.open({ ...options, host: address });
      } catch (err) {
        // A verified session's STARTTLS failure says so, whatever the server's reply (MTA-STS reports it).
        last = verified && starttlsFailed(err) ? new Error(`STARTTLS failed: ${describeError(err)}`) : err;
        if (!starttlsFailed(err) || this.#o.smarthost || verified) continue;
        this.#o.log.info(
          { mx: host.name, error: describeError(err) },
          'STARTTLS failed, retrying in plain text',
        );
        try {
          return await SmtpSession.open({ ...options, host: address, ignoreStarttls: true });
        } catch (plainErr) {
          last = plainErr;
        }
      }
    }
    throw last;
  }
}
