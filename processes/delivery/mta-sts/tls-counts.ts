import { createHash } from 'node:crypto';
import type { StsPolicy } from '../../../domain/delivery/mta-sts-policy.ts';
import type { TlsResultType } from '../../../domain/delivery/tls-report.ts';
import type { Clock } from '../../../platform/clock.ts';
import type { Database } from '../../../platform/db/database.ts';
import type { Logger } from '../../../platform/logger.ts';

/** One session's result towards a domain: under its policy (null: none found), at an MX host. */
export interface TlsSessionResult {
  domain: string;
  policy: StsPolicy | null;
  /** null: TLS as the policy asks (or any TLS without a policy). */
  resultType: TlsResultType | null;
  mx: string;
}

/** Counts are written in batches, at most this often. */
const FLUSH_MS = 1000;

type Row = {
  day: string;
  domain: string;
  policyType: string;
  policyHash: string;
  policyText: string;
  mxPatterns: string[];
  resultType: string;
  mx: string;
  sessions: number;
};

/**
 * Session counts for the daily TLS reports (RFC 8460), per UTC day, policy domain, policy, result and MX host.
 * Summed in memory and added to `tls_report_counts` once a second in one statement, whatever the rate of
 * delivery: a crash loses at most that second of counts, never mail.
 */
export class TlsCounts {
  readonly #db: Database;
  readonly #log: Logger;
  readonly #clock: Clock;
  #buffer = new Map<string, Row>();
  #timer?: NodeJS.Timeout;
  #writing: Promise<void> = Promise.resolve();

  constructor(o: { db: Database; log: Logger; clock: Clock }) {
    this.#db = o.db;
    this.#log = o.log;
    this.#clock = o.clock;
  }

  record(r: TlsSessionResult): void {
    const policyText = r.policy?.text ?? '';
    const row: Row = {
      day: this.#clock.now().toISOString().slice(0, 10),
      domain: r.domain.toLowerCase(),
      policyType: r.policy ? 'sts' : 'no-policy-found',
      policyHash: createHash('sha256').update(policyText).digest('hex'),
      policyText,
      mxPatterns: r.policy?.mx ?? [],
      resultType: r.resultType ?? '',
      mx: r.mx.toLowerCase(),
      sessions: 1,
    };
    const key = [row.day, row.domain, row.policyType, row.policyHash, row.resultType, row.mx].join(' ');
    const known = this.#buffer.get(key);
    if (known) known.sessions++;
    else this.#buffer.set(key, row);
    this.#timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Writes what is buffered (and waits for a write under way). */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const batch = [...this.#buffer.values()];
    this.#buffer = new Map();
    this.#writing = this.#writing.then(() => this.#write(batch));
    return this.#writing;
  }

  async #write(batch: Row[]): Promise<void> {
    if (batch.length === 0) return;
    try {
      await this.#db.query(
        `INSERT INTO tls_report_counts AS c (day, domain, policy_type, policy_hash, policy_text, mx_patterns,
           result_type, receiving_mx, sessions)
         SELECT day, domain, "policyType", "policyHash", "policyText", "mxPatterns"::jsonb, "resultType", mx, sessions
         FROM json_to_recordset($1::json) AS x(day date, domain text, "policyType" text, "policyHash" text,
           "policyText" text, "mxPatterns" text, "resultType" text, mx text, sessions bigint)
         ON CONFLICT (day, domain, policy_type, policy_hash, result_type, receiving_mx)
         DO UPDATE SET sessions = c.sessions + excluded.sessions`,
        [JSON.stringify(batch.map((r) => ({ ...r, mxPatterns: JSON.stringify(r.mxPatterns) })))],
      );
    } catch (err) {
      this.#log.warn({ err }, 'could not write the TLS report counts');
    }
  }
}
