import type { Resolver } from 'node:dns/promises';
import { rootCertificates } from 'node:tls';
import { parseStsPolicy, parseStsRecord, type StsPolicy } from '../../../domain/delivery/mta-sts-policy.ts';
import type { TlsResultType } from '../../../domain/delivery/tls-report.ts';
import { BoundedMap } from '../../../platform/bounded-map.ts';
import type { Clock } from '../../../platform/clock.ts';
import type { Config } from '../../../platform/config.ts';
import type { Database } from '../../../platform/db/database.ts';
import { isNoAnswer } from '../../../platform/dns.ts';
import type { Logger } from '../../../platform/logger.ts';
import { fetchPolicyText, PolicyFetchError } from './policy-fetch.ts';
import { TlsCounts, type TlsSessionResult } from './tls-counts.ts';

/** A domain's policy as delivery applies it; `failure` when one was announced but could not be had. */
export interface StsLookup {
  /** null (or mode none): deliver as without MTA-STS. */
  policy: StsPolicy | null;
  failure?: TlsResultType;
}

/** What the MTA asks of MTA-STS (processes/delivery/mta/outbound.ts). */
export interface MtaStsPort {
  policyOf(domain: string): Promise<StsLookup>;
  record(result: TlsSessionResult): void;
  /** Writes the counts not yet written (the MTA closing). */
  flush(): Promise<void>;
  /** Trusted CAs for verified TLS towards a policy's MX hosts (undefined: Node's own). */
  readonly ca?: string[];
}

/** A domain's TXT record is looked up again after this (per process); the policy itself is cached in PostgreSQL. */
const RECHECK_MS = 5 * 60_000;
const KNOWN_DOMAINS = 10_000;
const FETCH_TIMEOUT_MS = 10_000;

/** The system's CAs plus OUTBOUND_TLS_CA_FILE's (read at start-up), or undefined (Node's own) when it is not set. */
export function outboundCa(config: Config): string[] | undefined {
  return config.outboundTlsCa ? [...rootCertificates, config.outboundTlsCa] : undefined;
}

/**
 * MTA-STS (RFC 8461) for outbound delivery: a destination's `_mta-sts` TXT record is looked up at most every
 * five minutes per process; its policy is fetched over HTTPS when its id changed or the stored one expired, and
 * kept in `mta_sts_policies` for its max_age, shared by every process. A fetch that fails leaves a stored policy
 * in force, or none (the failure is counted for the TLS report).
 */
export class MtaSts implements MtaStsPort {
  readonly ca?: string[];
  readonly counts: TlsCounts;
  readonly #db: Database;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #resolver: Resolver;
  readonly #port: number;
  readonly #looked = new BoundedMap<string, { lookup: Promise<StsLookup>; at: number }>(KNOWN_DOMAINS);

  constructor(o: { db: Database; log: Logger; clock: Clock; config: Config; resolver: Resolver }) {
    this.#db = o.db;
    this.#log = o.log.child({ component: 'mta-sts' });
    this.#clock = o.clock;
    this.#resolver = o.resolver;
    this.#port = o.config.MTA_STS_PORT;
    this.ca = outboundCa(o.config);
    this.counts = new TlsCounts(o);
  }

  /**
   * The domain's policy. A look-up that fails (the database away) keeps this process's previous answer in force, or
   * rejects without one: the send is then deferred rather than made without a policy it may have.
   */
  policyOf(domain: string): Promise<StsLookup> {
    const now = Date.now();
    const previous = this.#looked.get(domain);
    if (previous && now - previous.at < RECHECK_MS) return previous.lookup;
    const entry = {
      lookup: this.#lookUp(domain).catch((err) => {
        this.#log.warn({ domain, err }, 'MTA-STS policy look-up failed');
        if (previous) return previous.lookup;
        if (this.#looked.get(domain) === entry) this.#looked.delete(domain);
        throw err;
      }),
      at: now,
    };
    this.#looked.set(domain, entry);
    return entry.lookup;
  }

  record(result: TlsSessionResult): void {
    this.counts.record(result);
  }

  flush(): Promise<void> {
    return this.counts.flush();
  }

  async #lookUp(domain: string): Promise<StsLookup> {
    let id: string | null = null;
    try {
      id = parseStsRecord(await this.#resolver.resolveTxt(`_mta-sts.${domain}`));
    } catch (err) {
      if (!isNoAnswer(err)) this.#log.info({ domain, err }, 'MTA-STS TXT lookup failed');
    }
    const stored = await this.#stored(domain);
    // RFC 8461 §5.1: without a record (or its lookup failing), a stored policy stays in force until it expires.
    if (id === null || stored?.id === id) return { policy: stored?.policy ?? null };
    try {
      const text = await fetchPolicyText(domain, {
        resolver: this.#resolver,
        port: this.#port,
        ca: this.ca,
        timeoutMs: FETCH_TIMEOUT_MS,
      });
      const policy = parseStsPolicy(text);
      if (policy instanceof Error) {
        this.#log.warn({ domain, reason: policy.message }, 'MTA-STS policy refused');
        return { policy: stored?.policy ?? null, failure: 'sts-policy-invalid' };
      }
      await this.#store(domain, id, policy);
      return { policy };
    } catch (err) {
      const webpki = err instanceof PolicyFetchError && err.webpki;
      this.#log.warn({ domain, reason: (err as Error).message }, 'MTA-STS policy could not be fetched');
      return {
        policy: stored?.policy ?? null,
        failure: webpki ? 'sts-webpki-invalid' : 'sts-policy-fetch-error',
      };
    }
  }

  async #stored(domain: string): Promise<{ id: string; policy: StsPolicy } | null> {
    const { rows } = await this.#db.query<{ policy_id: string; policy_text: string }>(
      'SELECT policy_id, policy_text FROM mta_sts_policies WHERE domain = $1 AND expires_at > $2',
      [domain, this.#clock.now()],
    );
    const policy = rows[0] && parseStsPolicy(rows[0].policy_text);
    return policy && !(policy instanceof Error) ? { id: rows[0].policy_id, policy } : null;
  }

  async #store(domain: string, id: string, policy: StsPolicy): Promise<void> {
    const now = this.#clock.now();
    await this.#db.query(
      `INSERT INTO mta_sts_policies (domain, policy_id, policy_text, fetched_at, expires_at)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (domain) DO UPDATE SET policy_id = excluded.policy_id, policy_text = excluded.policy_text,
         fetched_at = excluded.fetched_at, expires_at = excluded.expires_at`,
      [domain, id, policy.text, now, new Date(now.getTime() + policy.maxAge * 1000)],
    );
  }
}
